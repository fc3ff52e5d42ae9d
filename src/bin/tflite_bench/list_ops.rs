//! `--list-ops [MODEL...]`: every op and version range this runtime registers, or, given
//! models, each operator code a model uses and whether we can run it — so a user can check
//! a model before shipping it.

use tensorflowlite_c::abi::builtin_ops::TfLiteBuiltinOperator;
use tensorflowlite_c::model::Model;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;
use tensorflowlite_c::resolver::{OpFinder, describe_versions, opcode};

/// The op's schema name for a builtin code, or the code itself when the enum lacks it.
fn op_name(code: i32) -> String {
    TfLiteBuiltinOperator::from_raw(code).map_or_else(|| format!("builtin code {code}"), |o| o.name().to_string())
}

/// The whole table, builtins by name then custom ops; returns the text.
pub fn list_registered() -> String {
    let r = builtin_op_resolver();
    let mut builtins: Vec<(String, String)> =
        r.builtin_table().into_iter().map(|(c, v)| (op_name(c), describe_versions(&v))).collect();
    builtins.sort();
    let customs = r.custom_table();
    let mut out = format!("builtin ops: {}\n", builtins.len());
    for (name, v) in &builtins {
        out += &format!("  {name:<36} versions {v}\n");
    }
    out += &format!("custom ops: {}\n", customs.len());
    for (name, v) in &customs {
        out += &format!("  {name:<36} versions {}\n", describe_versions(v));
    }
    out
}

/// Each operator code `path` uses, with our verdict; `Err` when the model does not load.
/// The bool is true when every op resolves.
pub fn check_model(path: &str) -> Result<(String, bool), String> {
    let model = Model::from_file(std::path::Path::new(path)).map_err(|e| format!("{path}: {}", e.message))?;
    let r = builtin_op_resolver();
    let mut out = format!("{path}:\n");
    let mut all_ok = true;
    for code in model.fb().operator_codes().into_iter().flatten() {
        let c = opcode::builtin_code(&code);
        let v = code.version();
        let (name, ok, ours) = if c == TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32 {
            let name = code.custom_code().unwrap_or("").to_string();
            let ours = r.custom_table().into_iter().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap_or_default();
            (format!("custom {name}"), r.find_custom(&name, v).is_some(), ours)
        } else {
            (op_name(c), r.find_builtin(c, v).is_some(), r.builtin_versions(c))
        };
        all_ok &= ok;
        let verdict = match (ok, ours.is_empty()) {
            (true, _) => "ok".to_string(),
            (false, true) => "NOT SUPPORTED: this runtime does not implement it".to_string(),
            (false, false) => format!("NOT SUPPORTED: this runtime supports versions {}", describe_versions(&ours)),
        };
        out += &format!("  {name:<36} version {v:<3} {verdict}\n");
    }
    Ok((out, all_ok))
}
