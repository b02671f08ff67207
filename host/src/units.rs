//! Byte sizes: parsing `--size` and printing sizes and rates.

use crate::error::{Error, Result};

/// Parses a byte count: `4096`, `256M`, `256MiB`, `1.5G`. K/M/G/T are binary (KiB...).
pub fn parse_size(input: &str) -> Result<u64> {
    let s = input.trim();
    let bad = |why: &str| Error::BadSize {
        input: input.to_string(),
        why: why.to_string(),
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if s.starts_with('-') {
        return Err(bad("a size cannot be negative"));
    }
    if num.is_empty() {
        return Err(bad("expected a number"));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad("unknown unit (use K, M, G or T)")),
    };
    let value: f64 = num.parse().map_err(|_| bad("not a number"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad("too large"));
    }
    let bytes = bytes.round() as u64;
    if bytes == 0 {
        return Err(if value > 0.0 {
            bad("less than one byte")
        } else {
            Error::Zero { what: "--size" }
        });
    }
    Ok(bytes)
}

/// Parses a matrix shape: `8192x4096` or `4096x4096x4096` (each dimension > 0).
pub fn parse_shape(input: &str) -> Result<Vec<usize>> {
    let bad = |why: &str| Error::BadShape {
        input: input.to_string(),
        why: why.to_string(),
    };
    let dims = input
        .trim()
        .split(['x', 'X'])
        .map(|d| {
            let d = d.trim();
            d.parse::<usize>().map_err(|_| {
                if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) {
                    bad(&format!(
                        "{d} is larger than any dimension this machine can index ({})",
                        usize::MAX
                    ))
                } else {
                    bad("each dimension must be a whole number")
                }
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if !(2..=3).contains(&dims.len()) {
        return Err(bad("expected ROWSxCOLS or MxNxK"));
    }
    if dims.contains(&0) {
        return Err(bad("every dimension must be greater than zero"));
    }
    Ok(dims)
}

/// `268435456` -> `256.0 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Bytes over milliseconds, in GB/s (10^9 bytes per second, as bandwidth is quoted).
pub fn gb_per_s(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// FLOPs over milliseconds, in GFLOP/s (10^9 a second).
pub fn gflop_per_s(flops: u64, ms: f64) -> f64 {
    flops as f64 / (ms * 1e-3) / 1e9
}

/// A duration for people: `283.7 us` under a millisecond, else `2.543 ms`.
pub fn format_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.1} us", ms * 1e3)
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size(" 2 KiB ").unwrap(), 2048);
    }

    #[test]
    fn rejects_bad_sizes() {
        assert!(matches!(parse_size("0"), Err(Error::Zero { .. })));
        assert!(matches!(parse_size("0M"), Err(Error::Zero { .. })));
        assert!(matches!(parse_size("abc"), Err(Error::BadSize { .. })));
        assert!(matches!(parse_size("12Q"), Err(Error::BadSize { .. })));
        assert!(matches!(parse_size("-5"), Err(Error::BadSize { .. })));
        assert!(matches!(parse_size("99999999999T"), Err(Error::BadSize { .. })));
    }

    #[test]
    fn parses_shapes() {
        assert_eq!(parse_shape("8192x4096").unwrap(), [8192, 4096]);
        assert_eq!(parse_shape("33X65x17").unwrap(), [33, 65, 17]);
        for bad in ["8192", "1x2x3x4", "0x5", "axb", "5x-1"] {
            assert!(matches!(parse_shape(bad), Err(Error::BadShape { .. })), "{bad}");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(256 << 20), "256.0 MiB");
        assert!((gb_per_s(2_000_000_000, 1000.0) - 2.0).abs() < 1e-12);
    }
}
