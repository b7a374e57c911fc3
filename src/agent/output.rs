//! An agent's `[output]` (or `--output-schema`'s file in its place) read
//! and compiled into the schema a run checks its answer against. The
//! schema language itself is `schema`'s, which knows nothing of agents.

use std::path::Path;

use super::{OutputConfig, SchemaSource};
use crate::error::Error;
use crate::sandbox::beneath::Base;
use crate::schema::{self, OutputSchema};

/// The agent's `[output]`, or `--output-schema`'s file in its place, read
/// and compiled. `config_dir` is where a `schema_file` is relative to;
/// `override_file` is relative to `cwd` (`~` expanded in both, as for a
/// skill). Errors are config errors (exit 2).
pub fn output_schema(
    output: Option<&OutputConfig>,
    override_file: Option<&str>,
    config_dir: Option<&Path>,
    cwd: &Path,
) -> Result<Option<OutputSchema>, Error> {
    let max_repairs = output.map_or(super::DEFAULT_MAX_REPAIRS, |o| o.max_repairs);
    let value = match (override_file, output.map(|o| &o.schema)) {
        (Some(file), _) => schema::read_file(Base::Cwd(cwd), file, "--output-schema")?,
        (None, Some(SchemaSource::Inline(v))) => v.clone(),
        (None, Some(SchemaSource::File(file))) => {
            let base = config_dir.map_or(Base::Cwd(cwd), Base::Dir);
            schema::read_file(base, file, "output.schema_file")?
        }
        (None, None) => return Ok(None),
    };
    schema::compile(value, max_repairs).map(Some)
}
