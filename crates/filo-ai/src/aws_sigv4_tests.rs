use std::time::Duration;

use super::*;

const KEY_ID: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const EMPTY_HASH: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// 2015-08-30T12:36:00Z, the time of AWS's SigV4 test suite.
fn suite_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_440_938_160)
}

fn creds(token: Option<&str>) -> Credentials {
    Credentials {
        access_key_id: KEY_ID.into(),
        secret_access_key: SECRET.into(),
        session_token: token.map(str::to_string),
    }
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

fn suite_sign(
    method: &str,
    query: &[(&str, &str)],
    extra: &[(&str, &str)],
    body: &[u8],
    token: Option<&str>,
    content_hash_header: bool,
) -> String {
    let c = creds(token);
    let scope = Scope {
        credentials: &c,
        region: "us-east-1",
        service: "service",
        time: suite_time(),
    };
    let hash = sha256_hex(body);
    let mut h = headers(&[
        ("Host", "example.amazonaws.com"),
        ("X-Amz-Date", "20150830T123600Z"),
    ]);
    h.extend(headers(extra));
    if content_hash_header {
        h.push(("x-amz-content-sha256".into(), hash.clone()));
    }
    if let Some(token) = token {
        h.push(("x-amz-security-token".into(), token.into()));
    }
    authorization(
        &Signable {
            method,
            path: "/",
            query: query
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            headers: &h,
            payload_hash: &hash,
        },
        &scope,
    )
}

#[test]
fn hmac_matches_rfc_4231() {
    assert_eq!(
        hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    // A key longer than the block is hashed first (test case 6).
    assert_eq!(
        hex(&hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First"
        )),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    );
    assert_eq!(sha256_hex(b""), EMPTY_HASH);
}

#[test]
fn dates_in_utc() {
    assert_eq!(
        amz_date(suite_time()),
        ("20150830T123600Z".to_string(), "20150830".to_string())
    );
    // A leap day and the turn of a century.
    assert_eq!(
        amz_date(UNIX_EPOCH + Duration::from_secs(951_782_400)).0,
        "20000229T000000Z"
    );
    assert_eq!(amz_date(UNIX_EPOCH).0, "19700101T000000Z");
    for secs in [0, 951_782_400, 1_440_938_160, 1_796_188_987, 4_102_444_799] {
        let t = UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(parse_amz_date(&amz_date(t).0), Some(t), "{secs}");
    }
    assert_eq!(parse_amz_date("20150830T123600"), None);
    assert_eq!(parse_amz_date("20151330T123600Z"), None);
}

/// AWS's published test suite (aws-sig-v4-test-suite): `get-vanilla`, `post-vanilla`,
/// `get-vanilla-query-order-key-case`, `post-x-www-form-urlencoded`: the requests sign only
/// `host` and `x-amz-date` (and `content-type`).
#[test]
fn aws_test_suite_vectors() {
    let cred = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request";
    assert_eq!(
        suite_sign("GET", &[], &[], b"", None, false),
        format!(
            "{cred}, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        )
    );
    assert_eq!(
        suite_sign("POST", &[], &[], b"", None, false),
        format!(
            "{cred}, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
        )
    );
    assert_eq!(
        suite_sign(
            "GET",
            &[("Param2", "value2"), ("Param1", "value1")],
            &[],
            b"",
            None,
            false
        ),
        format!(
            "{cred}, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        )
    );
    assert_eq!(
        suite_sign(
            "POST",
            &[],
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"Param1=value1",
            None,
            false
        ),
        format!(
            "{cred}, SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
        )
    );
}

/// The same requests as the AWS SDK for JavaScript signs them (`@smithy/signature-v4` in pi
/// 0.73.1's dependencies, which adds `x-amz-content-sha256`), including temporary credentials.
#[test]
fn aws_sdk_vectors_with_content_hash_and_session_token() {
    let cred = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request";
    assert_eq!(
        suite_sign("GET", &[], &[], b"", None, true),
        format!(
            "{cred}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=726c5c4879a6b4ccbbd3b24edbd6b8826d34f87450fbbf4e85546fc7ba9c1642"
        )
    );
    assert_eq!(
        suite_sign(
            "POST",
            &[],
            &[("content-type", "application/x-www-form-urlencoded")],
            b"Param1=value1",
            None,
            true
        ),
        format!(
            "{cred}, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=3ae685fb42e386f9c46ad18dc31b73536a1fc7867dc5cdc8e34e4b1ee1fe5c50"
        )
    );
    let token = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";
    assert_eq!(
        suite_sign("POST", &[], &[], b"", Some(token), true),
        format!(
            "{cred}, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=e12fbbbcbd6d8a075f94783314b2a5e1b4c9a5996be8c24a468bb2116870cd73"
        )
    );
}

/// A Bedrock path: the model id's `%3A` is encoded again in the canonical path, as the SDK does.
#[test]
fn bedrock_paths_are_escaped_twice() {
    let c = creds(None);
    let scope = Scope {
        credentials: &c,
        region: "us-east-1",
        service: "bedrock",
        time: suite_time(),
    };
    let h = headers(&[
        ("host", "127.0.0.1:8080"),
        ("content-type", "application/json"),
        ("x-amz-content-sha256", "UNSIGNED"),
        ("x-amz-date", "20150830T123600Z"),
    ]);
    let value = authorization(
        &Signable {
            method: "POST",
            path: "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream",
            query: Vec::new(),
            headers: &h,
            payload_hash: "UNSIGNED",
        },
        &scope,
    );
    assert!(
        value.ends_with(
            "Signature=4b412183bc8c33672bfd6311f3e1156f9a2adf8be0d0298dcb6e4de657203a79"
        ),
        "{value}"
    );
    assert_eq!(canonical_path("/a/./b/../c//d/"), "/a/c/d/");
    assert_eq!(uri_escape("a b:c~"), "a%20b%3Ac~");
}

#[test]
fn sign_post_sets_the_headers_it_signs() {
    let c = creds(Some("tok"));
    let scope = Scope {
        credentials: &c,
        region: "eu-west-1",
        service: "bedrock",
        time: suite_time(),
    };
    let mut h = headers(&[
        ("content-type", "application/json"),
        ("authorization", "stale"),
        ("user-agent", "x"),
    ]);
    sign_post(
        "http://127.0.0.1:9/model/m/converse-stream",
        &mut h,
        b"{}",
        &scope,
    )
    .unwrap();
    let get = |name: &str| h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    assert_eq!(get("x-amz-date"), Some("20150830T123600Z"));
    assert_eq!(
        get("x-amz-content-sha256"),
        Some(sha256_hex(b"{}").as_str())
    );
    assert_eq!(get("x-amz-security-token"), Some("tok"));
    let auth = get("authorization").unwrap();
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="), "{auth}");
    assert_eq!(h.iter().filter(|(k, _)| k == "authorization").count(), 1);
    assert!(format!("{c:?}").contains("<redacted>") && !format!("{c:?}").contains(SECRET));
}
