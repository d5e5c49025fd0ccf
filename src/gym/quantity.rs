//! Memory quantities: parse `32Gi`, `1.5Gi`, `512M`, `1e9`, and multiply by a GPU count.
//!
//! The reference accepts only `<digits><letters>` and keeps the letters verbatim, so
//! `1.5Gi` is refused and `32Gb` passes until the API server rejects the pod (ref §7 #16).
//! Here a quantity is a decimal number with a Kubernetes suffix (binary `Ki`…`Ei`, decimal
//! `k`…`E`, or a decimal exponent); the product keeps the suffix when it is a whole number
//! of that unit and otherwise steps down to a smaller unit until it is (`1.5Gi × 1` is
//! `1536Mi`), so results stay exact.

use std::fmt;

/// Suffixes in descending size within each family.
const BINARY: &[&str] = &["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"];
const DECIMAL: &[&str] = &["E", "P", "T", "G", "M", "k"];

/// A parsed quantity: `digits / 10^scale` units of `suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    digits: u128,
    scale: u32,
    suffix: Suffix,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suffix {
    /// Plain bytes.
    None,
    Binary(usize),
    Decimal(usize),
    /// `e<N>`: a decimal exponent.
    Exponent(u32),
}

/// Why a quantity was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityError(pub String);

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Quantity {
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let bad = || {
            QuantityError(format!(
                "'{text}' is not a supported memory quantity (expected e.g. '32Gi', '512Mi', '1.5Gi')"
            ))
        };
        let t = text.trim();
        let num_end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, suffix_text) = t.split_at(num_end);
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
            return Err(bad());
        }
        let all = format!("{int_part}{frac_part}");
        let digits: u128 = all.parse().map_err(|_| bad())?;
        let scale = frac_part.len() as u32;
        let suffix = if suffix_text.is_empty() {
            Suffix::None
        } else if let Some(i) = BINARY.iter().position(|s| *s == suffix_text) {
            Suffix::Binary(i)
        } else if let Some(i) = DECIMAL.iter().position(|s| *s == suffix_text) {
            Suffix::Decimal(i)
        } else if let Some(exp) = suffix_text
            .strip_prefix(['e', 'E'])
            .and_then(|e| e.parse::<u32>().ok())
            .filter(|e| *e <= 18)
        {
            Suffix::Exponent(exp)
        } else {
            return Err(QuantityError(format!(
                "'{text}' has the unit '{suffix_text}', which Kubernetes does not know (use Ki, Mi, Gi, Ti, or k, M, G, T)"
            )));
        };
        if scale > 18 {
            return Err(bad());
        }
        Ok(Quantity {
            digits,
            scale,
            suffix,
        })
    }

    /// The quantity times `n`, written exactly.
    pub fn times(&self, n: u64) -> Result<String, QuantityError> {
        let overflow = || QuantityError("the memory quantity is too large".into());
        let mut digits = self
            .digits
            .checked_mul(u128::from(n))
            .ok_or_else(overflow)?;
        let mut scale = self.scale;
        // Drop trailing zeros of the fraction.
        while scale > 0 && digits % 10 == 0 {
            digits /= 10;
            scale -= 1;
        }
        let mut suffix = self.suffix;
        loop {
            if scale == 0 {
                return Ok(format!("{digits}{}", suffix_text(suffix)));
            }
            // Not whole: step to the next smaller unit (×1024 or ×1000), or to bytes.
            let (factor, next) = match suffix {
                Suffix::Binary(i) if i + 1 < BINARY.len() => (1024, Suffix::Binary(i + 1)),
                Suffix::Binary(_) => (1024, Suffix::None),
                Suffix::Decimal(i) if i + 1 < DECIMAL.len() => (1000, Suffix::Decimal(i + 1)),
                Suffix::Decimal(_) => (1000, Suffix::None),
                Suffix::Exponent(e) if e > 0 => (10, Suffix::Exponent(e - 1)),
                Suffix::Exponent(_) | Suffix::None => {
                    // Fractional bytes: round up to a whole byte.
                    let div = 10u128.pow(scale);
                    return Ok(format!("{}", digits.div_ceil(div)));
                }
            };
            digits = digits.checked_mul(factor).ok_or_else(overflow)?;
            suffix = if next == Suffix::Exponent(0) {
                Suffix::None
            } else {
                next
            };
            while scale > 0 && digits % 10 == 0 {
                digits /= 10;
                scale -= 1;
            }
        }
    }
}

fn suffix_text(s: Suffix) -> String {
    match s {
        Suffix::None => String::new(),
        Suffix::Binary(i) => BINARY[i].to_string(),
        Suffix::Decimal(i) => DECIMAL[i].to_string(),
        Suffix::Exponent(e) => format!("e{e}"),
    }
}

/// `memory × n` for the sidecar request (the reference's `_scale_quantity`).
pub fn scale_quantity(memory: &str, n: u64) -> Result<String, QuantityError> {
    Quantity::parse(memory)?.times(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    // ref §5.1 test 3
    #[test]
    fn scale_quantity_multiplies_and_keeps_the_unit() {
        assert_eq!(scale_quantity("32Gi", 2).unwrap(), "64Gi");
        assert_eq!(scale_quantity("512Mi", 1).unwrap(), "512Mi");
    }

    // ref §5.1 test 4
    #[test]
    fn scale_quantity_rejects_nonsense() {
        let e = scale_quantity("lots", 2).unwrap_err();
        assert!(e.0.contains("not a supported memory quantity"), "{e}");
    }

    // ref §7 #16: decimals work, bogus units fail here instead of at the API server.
    #[test]
    fn decimals_and_units() {
        assert_eq!(scale_quantity("1.5Gi", 2).unwrap(), "3Gi");
        assert_eq!(scale_quantity("1.5Gi", 1).unwrap(), "1536Mi");
        assert_eq!(scale_quantity("0.5k", 1).unwrap(), "500");
        assert_eq!(scale_quantity("1.5", 1).unwrap(), "2");
        assert_eq!(scale_quantity("40G", 2).unwrap(), "80G");
        assert_eq!(scale_quantity("1e9", 3).unwrap(), "3e9");
        assert_eq!(scale_quantity("2.5e1", 1).unwrap(), "25");
        assert!(scale_quantity("32Gb", 1).unwrap_err().0.contains("'Gb'"));
        assert!(scale_quantity("", 1).is_err());
        assert!(scale_quantity(".", 1).is_err());
        assert!(scale_quantity("1.2.3Gi", 1).is_err());
        assert!(scale_quantity("-1Gi", 1).is_err());
    }
}
