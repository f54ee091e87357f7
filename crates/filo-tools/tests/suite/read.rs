use pretty_assertions::assert_eq;
use serde_json::json;

use super::{failure, run, settings, text};
use filo_ai::ContentBlock;
use filo_tools::ReadTool;

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn reads_a_file_that_fits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "Hello, world!\nLine 2\nLine 3").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(text(&out), "Hello, world!\nLine 2\nLine 3");
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn missing_file_is_a_node_style_error() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let message = failure(run(&tool, json!({"path": "nope.txt"})).await);
    let abs = dir.path().join("nope.txt");
    assert_eq!(
        message,
        format!(
            "ENOENT: no such file or directory, access '{}'",
            abs.display()
        )
    );
}

#[tokio::test]
async fn line_limit_truncation_notice_and_details() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), numbered(2500)).unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "big.txt"})).await.unwrap();
    let t = text(&out);
    assert!(t.starts_with("line 1\nline 2\n"));
    assert!(
        t.ends_with("line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"),
        "{t}"
    );
    let trunc = &out.details.as_ref().unwrap()["truncation"];
    assert_eq!(trunc["truncated"], true);
    assert_eq!(trunc["truncatedBy"], "lines");
    assert_eq!(trunc["totalLines"], 2500);
    assert_eq!(trunc["outputLines"], 2000);
}

#[tokio::test]
async fn byte_limit_truncation_notice() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=500)
        .map(|i| format!("{i:03} {}\n", "x".repeat(200)))
        .collect();
    std::fs::write(dir.path().join("wide.txt"), body).unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "wide.txt"})).await.unwrap();
    let t = text(&out);
    // 205 bytes per line (204 + newline): 249 lines fit into 51,200 bytes.
    assert!(
        t.ends_with("\n\n[Showing lines 1-249 of 501 (50.0KB limit). Use offset=250 to continue.]"),
        "{}",
        &t[t.len() - 120..]
    );
    assert_eq!(out.details.unwrap()["truncation"]["truncatedBy"], "bytes");
}

#[tokio::test]
async fn offset_limit_and_both() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), numbered(100)).unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "f.txt", "offset": 51}))
        .await
        .unwrap();
    assert!(text(&out).starts_with("line 51\n"));
    assert!(text(&out).ends_with("line 100"));
    assert!(!text(&out).contains("line 50\n"));

    let out = run(&tool, json!({"path": "f.txt", "limit": 10}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        format!(
            "{}\n\n[90 more lines in file. Use offset=11 to continue.]",
            numbered(10)
        )
    );

    let out = run(&tool, json!({"path": "f.txt", "offset": 41, "limit": 20}))
        .await
        .unwrap();
    let expected: Vec<String> = (41..=60).map(|i| format!("line {i}")).collect();
    assert_eq!(
        text(&out),
        format!(
            "{}\n\n[40 more lines in file. Use offset=61 to continue.]",
            expected.join("\n")
        )
    );
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn offset_beyond_end_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.txt"), "a\nb\nc").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let message = failure(run(&tool, json!({"path": "s.txt", "offset": 100})).await);
    assert_eq!(message, "Offset 100 is beyond end of file (3 lines total)");
}

#[tokio::test]
async fn first_line_over_the_byte_limit_points_to_bash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.txt"), "y".repeat(60 * 1024)).unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "one.txt"})).await.unwrap();
    assert_eq!(
        text(&out),
        "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt | head -c 51200]"
    );
    assert_eq!(
        out.details.unwrap()["truncation"]["firstLineExceedsLimit"],
        true
    );
}

fn tiny_png() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(3, 2, image::Rgb([10, 20, 30]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

/// pi 1.6 reads BMP files; no provider takes them, so they reach the model as PNG.
#[tokio::test]
async fn a_bmp_file_is_read_as_an_image_and_sent_as_png() {
    let img = image::RgbImage::from_fn(5, 4, |x, y| image::Rgb([x as u8 * 40, y as u8 * 50, 3]));
    let mut bmp = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img.clone())
        .write_to(&mut bmp, image::ImageFormat::Bmp)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shot.bmp"), bmp.into_inner()).unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "shot.bmp"})).await.unwrap();
    assert_eq!(text(&out), "Read image file [image/png]");
    let ContentBlock::Image(sent) = &out.content[1] else {
        panic!("expected an image block, got {:?}", out.content);
    };
    assert_eq!(sent.mime_type, "image/png");
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(&sent.data)
        .unwrap();
    assert_eq!(image::load_from_memory(&png).unwrap().to_rgb8(), img);
}

#[tokio::test]
async fn images_are_detected_by_magic_bytes_not_extension() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("picture.txt"), tiny_png()).unwrap();
    std::fs::write(dir.path().join("notes.png"), "definitely not an image").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));

    let out = run(&tool, json!({"path": "picture.txt"})).await.unwrap();
    assert_eq!(text(&out), "Read image file [image/png]");
    match &out.content[1] {
        ContentBlock::Image(img) => {
            assert_eq!(img.mime_type, "image/png");
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&img.data)
                .unwrap();
            assert_eq!(bytes, tiny_png());
        }
        other => panic!("expected an image block, got {other:?}"),
    }
    assert_eq!(out.details, None);

    let out = run(&tool, json!({"path": "notes.png"})).await.unwrap();
    assert_eq!(text(&out), "definitely not an image");
    assert_eq!(out.content.len(), 1);
}

#[tokio::test]
async fn large_images_are_resized_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let img = image::RgbImage::from_fn(2500, 200, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, 0])
    });
    img.save(dir.path().join("wide.png")).unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "wide.png"})).await.unwrap();
    let t = text(&out);
    assert!(t.starts_with("Read image file [image/"), "{t}");
    assert!(t.ends_with("\n[Image: original 2500x200, displayed at 2000x160. Multiply coordinates by 1.25 to map to original image.]"), "{t}");
}

#[tokio::test]
async fn paths_accept_at_prefix_and_tilde() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.txt"), "home file").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    assert_eq!(
        text(&run(&tool, json!({"path": "@h.txt"})).await.unwrap()),
        "home file"
    );
    assert_eq!(
        text(&run(&tool, json!({"path": "~/h.txt"})).await.unwrap()),
        "home file"
    );
}

#[tokio::test]
async fn macos_screenshot_names_are_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Shot 10.00.00\u{202F}AM.txt"), "nnbsp").unwrap();
    std::fs::write(dir.path().join("It\u{2019}s.txt"), "curly").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    assert_eq!(
        text(
            &run(&tool, json!({"path": "Shot 10.00.00 AM.txt"}))
                .await
                .unwrap()
        ),
        "nnbsp"
    );
    assert_eq!(
        text(&run(&tool, json!({"path": "It's.txt"})).await.unwrap()),
        "curly"
    );
}

#[tokio::test]
async fn aborted_calls_fail_with_operation_aborted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let ctx = filo_agent::ToolCallContext::new("c", json!({"path": "a.txt"}));
    ctx.cancel.cancel();
    use filo_agent::AgentTool;
    assert_eq!(failure(tool.execute(ctx).await), "Operation aborted");
}

#[tokio::test]
async fn bad_arguments_get_validation_text() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let message = failure(run(&tool, json!({"offset": 1})).await);
    assert!(
        message.starts_with("Validation failed for tool \"read\":\n  - root: missing field `path`"),
        "{message}"
    );
}

#[tokio::test]
async fn numeric_strings_are_accepted_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("n.txt"), "a\nb\nc").unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "n.txt", "offset": "2", "limit": "1"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "b\n\n[1 more lines in file. Use offset=3 to continue.]"
    );
}
