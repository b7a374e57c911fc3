//! The bench's output: one table, a column per binary, each figure beside
//! its target, and the same figures with the machine's description in
//! `target/bench/results.json`.

use super::*;

/// One line of the table: a value per binary (None: that binary failed the
/// scenario), the goal, and what was seen.
pub(crate) struct Row {
    name: String,
    unit: &'static str,
    /// `<= X`, or `-` for a figure shown without a goal.
    target: &'static str,
    values: Vec<Option<f64>>,
    details: Vec<String>,
}

impl Row {
    pub(crate) fn new(name: impl Into<String>, unit: &'static str, target: &'static str) -> Row {
        Row {
            name: name.into(),
            unit,
            target,
            values: Vec::new(),
            details: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, value: Option<f64>, detail: String) {
        self.values.push(value);
        self.details.push(detail);
    }

    /// Whether `value` meets the target; None when there is none.
    pub(crate) fn met(&self, value: f64) -> Option<bool> {
        let bound: f64 = self.target.strip_prefix("<= ")?.parse().ok()?;
        Some(value <= bound)
    }
}

/// `static` when the binary asks for no dynamic loader, else `dynamic`.
pub(crate) fn linkage(path: &std::path::Path) -> &'static str {
    // An ELF file that needs a loader names it in a PT_INTERP segment; the
    // path of glibc's is in the file's first pages.
    match std::fs::read(path) {
        Ok(bytes)
            if bytes
                .windows(10)
                .take(64 * 1024)
                .any(|w| w == b"/lib64/ld-") =>
        {
            "dynamic"
        }
        Ok(_) => "static",
        Err(_) => "unreadable",
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    json!({"cpu": cpu, "cores": cores, "kernel": kernel})
}

/// `1.23 x met`, `1.40 x MISSED`, `failed`.
pub(crate) fn cell(row: &Row, value: Option<f64>) -> String {
    match value {
        None => "failed".into(),
        Some(v) => {
            let mark = match row.met(v) {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "",
            };
            format!("{v:>8.2} {:<3} {mark:<6}", row.unit)
        }
    }
}

pub(crate) fn report(bins: &[Bin], rows: &[Row]) {
    let m = machine();
    println!(
        "\naxe delegation benchmark (L = {} ms; {}, {} cores, Linux {})\n",
        L.as_millis(),
        m["cpu"].as_str().unwrap_or("?"),
        m["cores"],
        m["kernel"].as_str().unwrap_or("?")
    );
    for bin in bins {
        println!("{:>8}: {}", bin.label, bin.path.display());
    }
    println!();
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    print!("{:<width$}  {:<8}", "figure", "target");
    for bin in bins {
        print!("  {:<19}", bin.label);
    }
    println!();
    for row in rows {
        print!("{:<width$}  {:<8}", row.name, row.target);
        for v in &row.values {
            print!("  {:<19}", cell(row, *v));
        }
        println!();
    }
    println!("\ndetails:");
    for row in rows {
        println!("  {}", row.name);
        for (bin, detail) in bins.iter().zip(&row.details) {
            println!("    {}: {detail}", bin.label);
        }
    }
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let by_bin: Vec<Value> = bins
                .iter()
                .zip(r.values.iter().zip(&r.details))
                .map(|(b, (v, d))| {
                    json!({"binary": b.label, "value": v, "met": v.and_then(|v| r.met(v)),
                           "detail": d})
                })
                .collect();
            json!({"figure": r.name, "unit": r.unit, "target": r.target, "results": by_bin})
        })
        .collect();
    let binaries: Vec<Value> = bins
        .iter()
        .map(|b| json!({"label": b.label, "path": b.path.display().to_string()}))
        .collect();
    let out = json!({"machine": m, "latency_ms": L.as_millis() as u64,
                     "binaries": binaries, "figures": json_rows});
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let path = dir.join("results.json");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, format!("{out:#}\n"))) {
        Ok(()) => println!("\nwritten: {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}
