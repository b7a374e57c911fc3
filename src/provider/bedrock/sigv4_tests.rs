//! The signer against AWS's published SigV4 test vectors
//! (`fixtures/sigv4/`, see its README), and the headers a Bedrock request
//! carries at a fixed time.

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use super::*;

fn suite_keys() -> AwsKeys {
    AwsKeys {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: None,
        region: "us-east-1".into(),
    }
}

fn fixture(name: &str, ext: &str) -> Option<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sigv4")
        .join(format!("{name}.{ext}"));
    std::fs::read_to_string(path).ok()
}

/// Signs the vector's `.req` and checks what AWS published for it.
fn check(name: &str) {
    let req = fixture(name, "req").unwrap_or_else(|| panic!("{name}.req missing"));
    let (head, body) = req.split_once("\n\n").unwrap_or((&req, ""));
    let mut lines = head.lines();
    let first: Vec<&str> = lines.next().unwrap().split(' ').collect();
    let (method, target) = (first[0], first[1]);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(&str, &str)> = lines.map(|l| l.split_once(':').unwrap()).collect();
    let unsigned = Unsigned {
        method,
        path,
        query,
        headers: &headers,
        payload: body.as_bytes(),
    };
    let signed = sign(&suite_keys(), "service", &unsigned, "20150830T123600Z");
    if let Some(creq) = fixture(name, "creq") {
        assert_eq!(signed.canonical_request, creq, "{name}: canonical request");
    }
    if let Some(sts) = fixture(name, "sts") {
        assert_eq!(signed.string_to_sign, sts, "{name}: string to sign");
    }
    let authz = fixture(name, "authz").unwrap();
    assert_eq!(
        signed.authorization,
        authz.trim_end(),
        "{name}: authorization"
    );
}

#[test]
fn the_published_test_vectors_are_signed_as_aws_signs_them() {
    for name in [
        "get-vanilla",
        "post-vanilla",
        "get-vanilla-query-order-key-case",
        "post-x-www-form-urlencoded",
        "post-sts-header-before",
    ] {
        check(name);
    }
}

#[test]
fn a_bedrock_request_signs_its_host_date_token_and_double_encoded_model() {
    let keys = AwsKeys {
        session_token: Some("the-session-token".into()),
        region: "us-west-2".into(),
        ..suite_keys()
    };
    let t = UNIX_EPOCH + Duration::from_secs(1_440_938_160);
    assert_eq!(amz_date(t), "20150830T123600Z");
    let url = "https://bedrock-runtime.us-west-2.amazonaws.com/model/a.b-v1%3A0/converse";
    let headers = post_headers(&keys, "bedrock", url, b"{}", t);
    let names: Vec<&str> = headers.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        names,
        ["x-amz-date", "x-amz-security-token", "authorization"]
    );
    let authz = &headers[2].1;
    assert!(
        authz.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-west-2/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        ),
        "{authz}"
    );
    // The model ID's `%3A` is signed encoded again, as AWS's services
    // other than S3 canonicalize a path.
    let unsigned = Unsigned {
        method: "POST",
        path: "/model/a.b-v1%3A0/converse",
        query: "",
        headers: &[("host", "h")],
        payload: b"",
    };
    let signed = sign(&keys, "bedrock", &unsigned, "20150830T123600Z");
    assert!(
        signed
            .canonical_request
            .starts_with("POST\n/model/a.b-v1%253A0/converse\n\n"),
        "{}",
        signed.canonical_request
    );
    assert!(!format!("{keys:?}").contains("EXAMPLEKEY"));
}
