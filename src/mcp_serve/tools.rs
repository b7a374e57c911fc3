//! The tools `axe mcp serve` offers (design §9.6): one per agent served,
//! named after it, its `description` the agent file's. Its input is what
//! `call_agent` takes (`task`, `context`) and, as strings, the `{{KEY}}`
//! template variables of its system prompt and skill, every one required
//! (an agent file gives no defaults); an agent with an `[output]` object
//! schema declares it as the tool's `outputSchema`. Made once, at the
//! start, from the agent files read then.

use serde_json::{Map, Value, json};

use super::message;
use crate::agent::Catalog;
use crate::config::GlobalConfig;
use crate::deadline::Deadline;
use crate::resolve::template::Prompts;
use crate::resolve::{self, Overrides};

/// How long reading an agent's skill and schema files may take, seconds.
const READ_SECS: u64 = 30;

/// One agent as a tool.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// Its `{{KEY}}` variables, each a required string argument.
    pub vars: Vec<String>,
    /// The `[output]` schema, when it is an object's.
    pub output: Option<Value>,
}

/// The tools, in the catalog's order (sorted by name).
#[derive(Debug, Default)]
pub struct Tools(Vec<Tool>);

impl Tools {
    /// A tool for each agent `catalog` serves. An agent that does not
    /// resolve (its skill missing, say) is still offered, with `task` and
    /// `context` only: its calls fail with the reason, which is said on
    /// stderr now too.
    pub fn of(catalog: &Catalog, global: &GlobalConfig, cwd: &std::path::Path) -> Tools {
        let deadline = Deadline::after(READ_SECS);
        let mut tools = Vec::new();
        for name in catalog.roots() {
            let Ok(agent) = catalog.agent(name) else {
                continue;
            };
            let description = agent.config.description.clone();
            let (vars, output) = match resolve::resolve(
                (*agent).clone(),
                &Overrides::default(),
                global,
                cwd,
                &deadline,
            ) {
                Ok(r) => {
                    let vars = Prompts::of(&r)
                        .keys()
                        .iter()
                        .map(|k| (*k).to_string())
                        .collect();
                    let output = r
                        .output_schema
                        .as_ref()
                        .map(|s| s.schema.clone())
                        .filter(|s| s.get("type").and_then(Value::as_str) == Some("object"));
                    (vars, output)
                }
                Err(e) => {
                    crate::io::stderr::warn(&format!(
                        "mcp serve: agent {name}: {} (offered with task and context only)",
                        e.one_line()
                    ));
                    (Vec::new(), None)
                }
            };
            tools.push(Tool {
                name: name.clone(),
                description,
                vars,
                output,
            });
        }
        Tools(tools)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The tool `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.0.iter().find(|t| t.name == name)
    }

    /// `tools/list`'s result.
    pub fn list(&self) -> Value {
        let tools: Vec<Value> = self.0.iter().map(Tool::listed).collect();
        json!({"tools": tools})
    }
}

impl Tool {
    /// The tool as `tools/list` gives it.
    fn listed(&self) -> Value {
        let mut t = json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema(),
        });
        if let Some(o) = &self.output {
            t["outputSchema"] = o.clone();
        }
        t
    }

    /// `{type: object, properties: {task, context, <vars>}, required:
    /// [task, <vars>]}`.
    fn input_schema(&self) -> Value {
        let mut props = Map::new();
        props.insert(
            "task".into(),
            json!({"type": "string", "description": "The task for the agent: its user message"}),
        );
        props.insert(
            "context".into(),
            json!({"type": "string", "description": "Context to pass along with the task"}),
        );
        let mut required = vec![Value::from("task")];
        for v in &self.vars {
            props.insert(
                v.clone(),
                json!({"type": "string", "description": format!("Fills {{{{{v}}}}} in the agent's prompt")}),
            );
            required.push(Value::from(v.as_str()));
        }
        json!({"type": "object", "properties": props, "required": required})
    }

    /// The call's arguments (each as its JSON text; None: none given)
    /// checked against the input schema: the task, the context (empty when
    /// not given) and each variable's value; or what is wrong, in a line.
    pub fn arguments(&self, args: Option<&message::Arguments>) -> Result<Arguments, String> {
        let empty = message::Arguments::default();
        let args = args.unwrap_or(&empty);
        let text = |key: &str| match args.get(key) {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            Some(raw) => serde_json::from_str::<String>(raw.get())
                .map(Some)
                .map_err(|_| format!("argument \"{key}\" must be a string")),
        };
        let task = text("task")?.filter(|t| !t.trim().is_empty());
        let task = task.ok_or("argument \"task\" is required (a string, not empty)")?;
        let context = text("context")?.unwrap_or_default();
        let mut vars = Vec::new();
        for v in &self.vars {
            let value =
                text(v)?.ok_or_else(|| format!("argument \"{v}\" is required (a string)"))?;
            vars.push((v.clone(), value));
        }
        if let Some(k) = args.keys().find(|k| {
            !matches!(k.as_str(), "task" | "context") && !self.vars.iter().any(|v| v == *k)
        }) {
            return Err(format!(
                "unknown argument \"{}\"",
                crate::text::clip(k, 64, "…")
            ));
        }
        Ok(Arguments {
            task,
            context,
            vars,
        })
    }
}

/// A call's arguments, checked.
#[derive(Debug, Clone)]
pub struct Arguments {
    pub task: String,
    pub context: String,
    pub vars: Vec<(String, String)>,
}

impl Arguments {
    /// The user message: the task, or with a context, the task and the
    /// context as `call_agent` gives them to a sub-agent (design §3.4).
    pub fn message(&self) -> String {
        if self.context.is_empty() {
            self.task.clone()
        } else {
            format!("Task: {}\n\nContext:\n{}", self.task, self.context)
        }
    }
}
