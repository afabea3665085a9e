//! The process-wide ONNX Runtime environment (ONNX Runtime allows one per process).

use std::path::Path;
use std::sync::OnceLock;

use ort::environment::Environment;

use crate::EmbedError;

static ENV: OnceLock<Result<Environment, String>> = OnceLock::new();

/// Loads ONNX Runtime from `lib` once per process, with telemetry off, and returns the
/// environment. Later calls return the first environment whatever `lib` they name.
pub(crate) fn environment(lib: &Path) -> Result<Environment, EmbedError> {
    if !lib.is_file() {
        return Err(EmbedError::MissingFile(lib.to_path_buf()));
    }
    let env = ENV.get_or_init(|| {
        // Must be set before the library is loaded; the PyPI build otherwise records telemetry.
        // SAFETY: set once, before any ONNX Runtime thread exists, under the OnceLock.
        unsafe { std::env::set_var("ORT_DISABLE_TELEMETRY", "1") };
        let builder = ort::init_from(lib).map_err(|e| e.to_string())?;
        builder.with_name("toolsearch").with_telemetry(false).build().map_err(|e| e.to_string())
    });
    env.clone().map_err(|e| EmbedError::RuntimeLoad(lib.to_path_buf(), e))
}
