//! config.toml's unit tests: keys, base URLs, retries, named providers.

use super::*;

#[test]
fn a_provider_without_a_key_or_with_a_bad_base_url_is_a_typed_error() {
    let (config, _) = GlobalConfig::parse(
        "[providers.anthropic]\napi_key = \"sk-typed-errors-0123456789\"\nbase_url = \"ftp://h\"\n",
    )
    .unwrap();
    if std::env::var_os("AXE_ANTHROPIC_BASE_URL").is_none() {
        let m = ModelRef::parse("anthropic/m").unwrap();
        assert!(matches!(
            config.provider(&m),
            Err(Error::InvalidBaseUrl { provider, url }) if url == "ftp://h" && provider == "anthropic"
        ));
    }
    // The environment's key, where there is one, is not missing.
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        let m = ModelRef::parse("openai/m").unwrap();
        assert!(matches!(
            GlobalConfig::default().provider(&m),
            Err(Error::MissingKey { provider, var }) if provider == "openai" && var == "OPENAI_API_KEY"
        ));
    }
}

#[test]
fn the_configs_debug_text_shows_no_key() {
    let dir = std::env::temp_dir().join(format!("axe-config-debug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "[providers.openai]\napi_key = \"sk-config-debug-0123456789\"\nbase_url = \"http://u:pw-config-debug@h\"\n",
    )
    .unwrap();
    let (config, _) = GlobalConfig::load_from(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = format!("{config:?}");
    assert!(!text.contains("sk-config-debug"), "{text}");
    assert!(!text.contains("pw-config-debug"), "{text}");
}

#[test]
fn ollama_host_gets_scheme_and_port() {
    assert_eq!(ollama_host_url("127.0.0.1"), "http://127.0.0.1:11434");
    assert_eq!(ollama_host_url("10.0.0.2:9999"), "http://10.0.0.2:9999");
    assert_eq!(
        ollama_host_url("https://o.example/"),
        "https://o.example:443"
    );
    assert_eq!(ollama_host_url("http://h"), "http://h:80");
    assert_eq!(ollama_host_url("http://h:1234"), "http://h:1234");
    assert_eq!(
        ollama_host_url("127.0.0.1:1/ollama"),
        "http://127.0.0.1:1/ollama"
    );
    assert_eq!(ollama_host_url(":18777"), "http://127.0.0.1:18777");
    assert_eq!(ollama_host_url("::1"), "http://[::1]:11434");
    assert_eq!(ollama_host_url("[::1]:5000"), "http://[::1]:5000");
}
