//! Images for `read`: MIME sniffing by magic bytes and pi's auto-resize (fit 2000×2000 and
//! 4.5 MiB, trying PNG and JPEG at falling qualities and scales).

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat};

/// Largest width or height sent to the model.
pub const MAX_DIMENSION: u32 = 2000;
/// Largest encoded size sent to the model (4.5 MiB, below Anthropic's 5 MB).
pub const MAX_IMAGE_BYTES: usize = 4_718_592;
const FIRST_JPEG_QUALITY: u8 = 80;
const QUALITY_STEPS: [u8; 4] = [85, 70, 55, 40];
const SCALE_STEPS: [f64; 5] = [1.0, 0.75, 0.5, 0.35, 0.25];

/// The MIME type of a supported image (`image/jpeg|png|gif|webp|bmp`) from its first bytes.
pub fn sniff_image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"BM") && is_bmp(head) {
        return Some("image/bmp");
    }
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        Some("image/png")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// pi 1.6's check of a BMP header: a file size and pixel offset that fit, a known DIB header
/// (core 12 bytes, or 40–124), one colour plane and a standard bit depth.
fn is_bmp(head: &[u8]) -> bool {
    let u16_at = |i: usize| head.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |i: usize| {
        head.get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(size), Some(offset), Some(dib)) = (u32_at(2), u32_at(10), u32_at(14)) else {
        return false;
    };
    if head.len() < 26 || (size != 0 && (size < 26 || offset >= size)) {
        return false;
    }
    if u64::from(offset) < 14 + u64::from(dib) {
        return false;
    }
    let (planes, bits) = match dib {
        12 => (u16_at(22), u16_at(24)),
        40..=124 => (u16_at(26), u16_at(28)),
        _ => return false,
    };
    planes == Some(1) && bits.is_some_and(|b| [1, 4, 8, 16, 24, 32].contains(&b))
}

/// An image ready for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedImage {
    pub bytes: Vec<u8>,
    pub mime_type: String,
    pub original_width: u32,
    pub original_height: u32,
    pub width: u32,
    pub height: u32,
    pub was_resized: bool,
}

impl PreparedImage {
    fn unchanged(bytes: Vec<u8>, mime: &str, width: u32, height: u32) -> Self {
        PreparedImage {
            bytes,
            mime_type: mime.to_string(),
            original_width: width,
            original_height: height,
            width,
            height,
            was_resized: false,
        }
    }

    /// pi's note telling the model how to map coordinates back; `None` when not resized.
    pub fn dimension_note(&self) -> Option<String> {
        if !self.was_resized || self.width == 0 {
            return None;
        }
        let scale = f64::from(self.original_width) / f64::from(self.width);
        Some(format!(
            "[Image: original {}x{}, displayed at {}x{}. Multiply coordinates by {scale:.2} to map to original image.]",
            self.original_width, self.original_height, self.width, self.height
        ))
    }
}

fn encode_png(image: &DynamicImage) -> Option<Vec<u8>> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png).ok()?;
    Some(out.into_inner())
}

fn encode_jpeg(image: &DynamicImage, quality: u8) -> Option<Vec<u8>> {
    let rgb = image.to_rgb8();
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&rgb)
        .ok()?;
    Some(out)
}

/// Resize to `width`×`height`, encode as PNG and JPEG, keep the smaller.
fn smaller_encoding(
    image: &DynamicImage,
    width: u32,
    height: u32,
    quality: u8,
) -> Option<(Vec<u8>, &'static str)> {
    let resized = image.resize_exact(width.max(1), height.max(1), FilterType::Lanczos3);
    let png = encode_png(&resized);
    let jpeg = encode_jpeg(&resized, quality);
    match (png, jpeg) {
        (Some(p), Some(j)) if p.len() <= j.len() => Some((p, "image/png")),
        (_, Some(j)) => Some((j, "image/jpeg")),
        (Some(p), None) => Some((p, "image/png")),
        (None, None) => None,
    }
}

fn round_scaled(value: u32, numerator: u32, denominator: u32) -> u32 {
    ((f64::from(value) * f64::from(numerator)) / f64::from(denominator)).round() as u32
}

/// The box and size an image must fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    pub max_dimension: u32,
    pub max_bytes: usize,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            max_dimension: MAX_DIMENSION,
            max_bytes: MAX_IMAGE_BYTES,
        }
    }
}

/// Fit an image into pi's limits. Undecodable input is returned unchanged (as pi does).
pub fn prepare_image(bytes: Vec<u8>, mime: &str) -> PreparedImage {
    prepare_image_with(bytes, mime, ImageLimits::default())
}

/// Fit an image into `limits`: scale into the box, then try PNG and JPEG at falling qualities,
/// then smaller scales (never below 100 px); the last attempt is returned if nothing fits.
pub fn prepare_image_with(bytes: Vec<u8>, mime: &str, limits: ImageLimits) -> PreparedImage {
    let Ok(decoded) = image::load_from_memory(&bytes) else {
        return PreparedImage::unchanged(bytes, mime, 0, 0);
    };
    let (ow, oh) = (decoded.width(), decoded.height());
    let (max_dim, max_bytes) = (limits.max_dimension, limits.max_bytes);
    if ow <= max_dim && oh <= max_dim && bytes.len() <= max_bytes {
        // No provider takes BMP: it goes to the model as PNG, pixel for pixel.
        if mime == "image/bmp"
            && let Some(png) = encode_png(&decoded)
            && png.len() <= max_bytes
        {
            return PreparedImage::unchanged(png, "image/png", ow, oh);
        }
        if mime != "image/bmp" {
            return PreparedImage::unchanged(bytes, mime, ow, oh);
        }
    }
    let (mut tw, mut th) = (ow, oh);
    if tw > max_dim {
        th = round_scaled(th, max_dim, tw);
        tw = max_dim;
    }
    if th > max_dim {
        tw = round_scaled(tw, max_dim, th);
        th = max_dim;
    }
    let done = |encoded: (Vec<u8>, &'static str), width: u32, height: u32| PreparedImage {
        bytes: encoded.0,
        mime_type: encoded.1.to_string(),
        original_width: ow,
        original_height: oh,
        width,
        height,
        was_resized: true,
    };
    let Some(mut best) = smaller_encoding(&decoded, tw, th, FIRST_JPEG_QUALITY) else {
        return PreparedImage::unchanged(bytes, mime, ow, oh);
    };
    let (mut fw, mut fh) = (tw, th);
    if best.0.len() <= max_bytes {
        return done(best, fw, fh);
    }
    for quality in QUALITY_STEPS {
        if let Some(candidate) = smaller_encoding(&decoded, tw, th, quality) {
            best = candidate;
            if best.0.len() <= max_bytes {
                return done(best, fw, fh);
            }
        }
    }
    for scale in SCALE_STEPS {
        fw = (f64::from(tw) * scale).round() as u32;
        fh = (f64::from(th) * scale).round() as u32;
        if fw < 100 || fh < 100 {
            break;
        }
        for quality in QUALITY_STEPS {
            if let Some(candidate) = smaller_encoding(&decoded, fw, fh, quality) {
                best = candidate;
                if best.0.len() <= max_bytes {
                    return done(best, fw, fh);
                }
            }
        }
    }
    done(best, fw, fh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn png_of(width: u32, height: u32) -> Vec<u8> {
        let img = RgbImage::from_fn(width, height, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 7])
        });
        encode_png(&DynamicImage::ImageRgb8(img)).unwrap()
    }

    #[test]
    fn sniffs_magic_bytes() {
        assert_eq!(sniff_image_mime(&png_of(2, 2)), Some("image/png"));
        assert_eq!(
            sniff_image_mime(b"\xFF\xD8\xFF\xE0rest"),
            Some("image/jpeg")
        );
        assert_eq!(sniff_image_mime(b"GIF89a..."), Some("image/gif"));
        assert_eq!(
            sniff_image_mime(b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(sniff_image_mime(b"plain text"), None);
    }

    fn bmp_of(width: u32, height: u32) -> Vec<u8> {
        let img = RgbImage::from_fn(width, height, |x, y| Rgb([x as u8, y as u8, 9]));
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(img)
            .write_to(&mut out, ImageFormat::Bmp)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn a_bmp_is_sniffed_by_its_header_as_pi_16_does() {
        let bmp = bmp_of(3, 2);
        assert_eq!(sniff_image_mime(&bmp), Some("image/bmp"));
        // "BM" alone, a DIB header of an unknown size, a pixel offset past the file: not BMP.
        assert_eq!(sniff_image_mime(b"BM and then some text here"), None);
        let mut odd = bmp.clone();
        odd[14] = 99;
        assert_eq!(sniff_image_mime(&odd), None);
        let mut past = bmp;
        past[10..14].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(sniff_image_mime(&past), None);
    }

    #[test]
    fn a_bmp_reaches_the_model_as_png_pixel_for_pixel() {
        let out = prepare_image(bmp_of(40, 30), "image/bmp");
        assert_eq!(out.mime_type, "image/png");
        assert!(!out.was_resized);
        assert_eq!((out.width, out.height), (40, 30));
        let back = image::load_from_memory(&out.bytes).unwrap().to_rgb8();
        assert_eq!(back.get_pixel(39, 29), &Rgb([39, 29, 9]));
        // Larger than the box: resized like any other image, never sent as BMP.
        let big = prepare_image_with(
            bmp_of(300, 10),
            "image/bmp",
            ImageLimits {
                max_dimension: 100,
                ..ImageLimits::default()
            },
        );
        assert!(big.was_resized);
        assert_ne!(big.mime_type, "image/bmp");
    }

    #[test]
    fn small_images_pass_through() {
        let bytes = png_of(10, 10);
        let out = prepare_image(bytes.clone(), "image/png");
        assert!(!out.was_resized);
        assert_eq!(out.bytes, bytes);
        assert_eq!(out.dimension_note(), None);
    }

    #[test]
    fn wide_images_are_scaled_to_fit() {
        let out = prepare_image(png_of(2200, 110), "image/png");
        assert!(out.was_resized);
        assert_eq!((out.width, out.height), (2000, 100));
        assert_eq!(
            out.dimension_note().unwrap(),
            "[Image: original 2200x110, displayed at 2000x100. Multiply coordinates by 1.10 to map to original image.]"
        );
        let again = image::load_from_memory(&out.bytes).unwrap();
        assert_eq!((again.width(), again.height()), (2000, 100));
    }

    #[test]
    fn oversized_bytes_fall_back_to_smaller_encodings() {
        // Noise compresses badly: at 300x300 neither encoding fits 20 KB until scaled down.
        let mut seed = 7u32;
        let img = RgbImage::from_fn(300, 300, |_, _| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let [a, b, c, _] = seed.to_le_bytes();
            Rgb([a, b, c])
        });
        let bytes = encode_png(&DynamicImage::ImageRgb8(img)).unwrap();
        let limits = ImageLimits {
            max_dimension: 2000,
            max_bytes: 20_000,
        };
        let out = prepare_image_with(bytes, "image/png", limits);
        assert!(out.was_resized);
        assert_eq!(out.mime_type, "image/jpeg");
        assert!(out.bytes.len() <= 20_000, "{}", out.bytes.len());
        assert!(out.width < 300 && out.width >= 100, "{}", out.width);
        assert_eq!(out.width, out.height);
        assert!(
            out.dimension_note()
                .unwrap()
                .starts_with("[Image: original 300x300, displayed at ")
        );
    }

    #[test]
    fn undecodable_images_pass_through() {
        let out = prepare_image(b"\x89PNG\r\n\x1a\ngarbage".to_vec(), "image/png");
        assert!(!out.was_resized);
        assert_eq!(out.mime_type, "image/png");
    }
}
