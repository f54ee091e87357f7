use super::*;

/// A message as the AWS SDK's own `EventStreamCodec` (@smithy/core 0.73-era, in pi 0.73.1's
/// dependencies) encodes it: three string headers, an int32 header `n` = 7, a `true` header
/// `flag`, and a JSON payload.
const AWS_CODEC_MESSAGE: &str = "000000ab00000064280ad4af0b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c74610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e74016e040000000704666c6167007b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a7b2274657874223a224869227d2c2270223a22616263227d8521321b";

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn frames(bytes: &[u8], chunk: usize) -> Result<Vec<SseFrame>, AiError> {
    let mut parser = EventStreamParser::new();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        parser.feed(piece, &mut |f| {
            out.push(f.clone());
            Ok(())
        })?;
    }
    parser.finish()?;
    Ok(out)
}

#[test]
fn decodes_the_aws_codecs_bytes_whatever_the_chunking() {
    let bytes = unhex(AWS_CODEC_MESSAGE);
    for chunk in [1, 3, 12, 13, 64, bytes.len()] {
        let got = frames(&bytes, chunk).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event, "contentBlockDelta");
        assert_eq!(
            got[0].data,
            r#"{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abc"}"#
        );
    }
    let mut parser = EventStreamParser::new();
    let mut messages = Vec::new();
    parser
        .feed_messages(&bytes, &mut |m| {
            messages.push(m);
            Ok(())
        })
        .unwrap();
    // Only string headers are kept; the int and bool headers were read and skipped.
    assert_eq!(
        messages[0].headers,
        vec![
            (":event-type".to_string(), "contentBlockDelta".to_string()),
            (":content-type".to_string(), "application/json".to_string()),
            (":message-type".to_string(), "event".to_string()),
        ]
    );
}

#[test]
fn our_encoder_matches_the_aws_codec_for_string_headers() {
    let ours = encode_message(
        &[
            (":event-type", "contentBlockDelta"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        br#"{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abc"}"#,
    );
    // The AWS message minus its `n` (int32: 1+1+1+4 bytes) and `flag` (bool: 1+4+1 bytes)
    // headers: same layout, lengths 13 smaller.
    assert_eq!(ours.len(), unhex(AWS_CODEC_MESSAGE).len() - 13);
    let got = frames(&ours, 5).unwrap();
    assert_eq!(got[0].event, "contentBlockDelta");
}

#[test]
fn corrupt_checksums_and_lengths_are_clear_errors() {
    let good = unhex(AWS_CODEC_MESSAGE);
    let mut prelude = good.clone();
    prelude[1] ^= 0x01;
    let e = frames(&prelude, 64).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Malformed stream data: event-stream message has a bad prelude checksum"),
        "{e}"
    );
    let mut body = good.clone();
    let at = body.len() - 10;
    body[at] ^= 0x20;
    let e = frames(&body, 7).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Malformed stream data: event-stream message has a bad message checksum (171 bytes)"
    );
    let e = frames(&good[..100], 64).unwrap_err();
    assert!(e.to_string().contains("cut short"), "{e}");
    // A prelude with a valid checksum but an impossible length.
    let mut tiny = vec![0, 0, 0, 8, 0, 0, 0, 0];
    tiny.extend_from_slice(&crc32fast::hash(&tiny).to_be_bytes());
    let e = frames(&tiny, 64).unwrap_err();
    assert!(e.to_string().contains("impossible length 8"), "{e}");
}

#[test]
fn exceptions_carry_their_status_class() {
    let bytes = encode_message(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
            (":content-type", "application/json"),
        ],
        br#"{"message":"Too many tokens, please wait before trying again."}"#,
    );
    let e = frames(&bytes, 9).unwrap_err();
    assert_eq!(e.http_status(), Some(429));
    assert!(e.is_retryable());
    let AiError::Http { body, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        body,
        r#"{"__type":"ThrottlingException","message":"Too many tokens, please wait before trying again."}"#
    );
    assert_eq!(exception_status("ValidationException"), 400);
    assert_eq!(exception_status("ServiceUnavailableException"), 503);
    assert_eq!(exception_status("ModelStreamErrorException"), 424);
    assert_eq!(exception_status("InternalServerException"), 500);
    let error = encode_message(
        &[
            (":message-type", "error"),
            (":error-code", "InternalFailure"),
            (":error-message", "boom"),
        ],
        b"",
    );
    assert_eq!(
        frames(&error, 64).unwrap_err(),
        AiError::Provider("boom".into())
    );
}
