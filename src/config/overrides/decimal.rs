//! Just enough of Python's `decimal` to reproduce Hydra's float `range()` exactly.
//!
//! Hydra iterates float ranges with `Decimal(float)` values (exact binary expansions) and
//! `start += step` in the default context: 28 significant digits, round-half-even. That
//! double rounding is why `range(0,10,3.3)` yields `9.9` where plain `f64` arithmetic gives
//! `9.899999999999999`; matching Hydra needs the same arithmetic.

use std::cmp::Ordering;

/// Python's default decimal context precision.
const PRECISION: usize = 28;

/// `(-1)^neg * digits * 10^exp`, digits little-endian base 10 without high zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dec {
    neg: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Dec {
    fn zero() -> Dec {
        Dec {
            neg: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    pub(crate) fn from_i64(i: i64) -> Dec {
        let mut digits = Vec::new();
        let mut u = i.unsigned_abs();
        while u > 0 {
            digits.push((u % 10) as u8);
            u /= 10;
        }
        Dec {
            neg: i < 0,
            digits,
            exp: 0,
        }
    }

    /// The exact value of a finite float (`Decimal(f)`); `None` for inf/nan.
    pub(crate) fn from_f64(f: f64) -> Option<Dec> {
        if !f.is_finite() {
            return None;
        }
        let bits = f.to_bits();
        let neg = bits >> 63 == 1;
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1u64 << 52) - 1);
        let (mant, e2) = if biased == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), biased - 1075)
        };
        let mut d = Dec::from_i64(0);
        let mut m = mant;
        while m > 0 {
            d.digits.push((m % 10) as u8);
            m /= 10;
        }
        if e2 >= 0 {
            for _ in 0..e2 {
                mul_small(&mut d.digits, 2);
            }
        } else {
            // m / 2^k == m * 5^k / 10^k
            for _ in 0..-e2 {
                mul_small(&mut d.digits, 5);
            }
            d.exp = e2;
        }
        let low_zeros = d.digits.iter().take_while(|&&x| x == 0).count();
        d.digits.drain(..low_zeros);
        d.exp += low_zeros as i64;
        d.neg = neg && !d.digits.is_empty();
        Some(d)
    }

    /// `float(d)`: correctly rounded through Rust's decimal parser.
    pub(crate) fn to_f64(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let mut s = String::with_capacity(self.digits.len() + 8);
        if self.neg {
            s.push('-');
        }
        s.extend(self.digits.iter().rev().map(|d| char::from(b'0' + d)));
        s.push_str(&format!("e{}", self.exp));
        s.parse().unwrap_or(f64::NAN)
    }

    /// `a + b` rounded to 28 significant digits, half-even (Python's default context).
    pub(crate) fn add(&self, other: &Dec) -> Dec {
        let mut r = exact_add(self, other);
        r.round();
        r
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub(crate) fn is_negative(&self) -> bool {
        self.neg
    }

    fn round(&mut self) {
        let n = self.digits.len();
        if n <= PRECISION {
            return;
        }
        let drop = n - PRECISION;
        let first_dropped = self.digits[drop - 1];
        let rest_nonzero = self.digits[..drop - 1].iter().any(|&d| d != 0);
        let mut kept = self.digits.split_off(drop);
        let odd = kept.first().is_some_and(|d| d % 2 == 1);
        let up = first_dropped > 5 || (first_dropped == 5 && (rest_nonzero || odd));
        self.exp += drop as i64;
        if up {
            let mut carry = 1u8;
            for d in kept.iter_mut() {
                let v = *d + carry;
                *d = v % 10;
                carry = v / 10;
                if carry == 0 {
                    break;
                }
            }
            if carry > 0 {
                kept.push(carry);
            }
            if kept.len() > PRECISION {
                kept.remove(0);
                self.exp += 1;
            }
        }
        self.digits = kept;
        trim(&mut self.digits);
    }
}

impl PartialOrd for Dec {
    fn partial_cmp(&self, other: &Dec) -> Option<Ordering> {
        let neg_other = Dec {
            neg: !other.neg && !other.digits.is_empty(),
            ..other.clone()
        };
        let diff = exact_add(self, &neg_other);
        Some(if diff.digits.is_empty() {
            Ordering::Equal
        } else if diff.neg {
            Ordering::Less
        } else {
            Ordering::Greater
        })
    }
}

fn mul_small(digits: &mut Vec<u8>, k: u8) {
    let mut carry = 0u8;
    for d in digits.iter_mut() {
        let v = *d * k + carry;
        *d = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        digits.push(carry);
    }
}

fn trim(digits: &mut Vec<u8>) {
    while digits.last() == Some(&0) {
        digits.pop();
    }
}

/// Digits of `d` scaled to exponent `exp` (which must be <= d.exp).
fn aligned(d: &Dec, exp: i64) -> Vec<u8> {
    let shift = (d.exp - exp) as usize;
    let mut v = vec![0u8; shift];
    v.extend_from_slice(&d.digits);
    v
}

fn cmp_mag(a: &[u8], b: &[u8]) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

fn exact_add(a: &Dec, b: &Dec) -> Dec {
    if a.digits.is_empty() {
        return b.clone();
    }
    if b.digits.is_empty() {
        return a.clone();
    }
    let exp = a.exp.min(b.exp);
    let (mut x, mut y) = (aligned(a, exp), aligned(b, exp));
    trim(&mut x);
    trim(&mut y);
    let (neg, mut digits) = if a.neg == b.neg {
        (a.neg, add_mag(&x, &y))
    } else {
        match cmp_mag(&x, &y) {
            Ordering::Equal => return Dec::zero(),
            Ordering::Greater => (a.neg, sub_mag(&x, &y)),
            Ordering::Less => (b.neg, sub_mag(&y, &x)),
        }
    };
    trim(&mut digits);
    // Drop low zeros to keep the representation short (value unchanged).
    let low_zeros = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..low_zeros);
    Dec {
        neg: neg && !digits.is_empty(),
        digits,
        exp: exp + low_zeros as i64,
    }
}

fn add_mag(x: &[u8], y: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len().max(y.len()) + 1);
    let mut carry = 0u8;
    for i in 0..x.len().max(y.len()) {
        let v = x.get(i).copied().unwrap_or(0) + y.get(i).copied().unwrap_or(0) + carry;
        out.push(v % 10);
        carry = v / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out
}

/// `x - y` for `x >= y`.
fn sub_mag(x: &[u8], y: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len());
    let mut borrow = 0i8;
    for (i, &xd) in x.iter().enumerate() {
        let mut v = xd as i8 - y.get(i).copied().unwrap_or(0) as i8 - borrow;
        borrow = 0;
        if v < 0 {
            v += 10;
            borrow = 1;
        }
        out.push(v as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_float_expansion() {
        let d = Dec::from_f64(0.1).unwrap();
        let s: String = d
            .digits
            .iter()
            .rev()
            .map(|x| char::from(b'0' + x))
            .collect();
        assert_eq!(s, "1000000000000000055511151231257827021181583404541015625");
        assert_eq!(d.exp, -55);
        assert_eq!(d.to_f64(), 0.1);
        assert_eq!(Dec::from_f64(-2.5).unwrap().to_f64(), -2.5);
        assert_eq!(Dec::from_f64(1e300).unwrap().to_f64(), 1e300);
        assert!(Dec::from_f64(f64::NAN).is_none());
    }

    #[test]
    fn addition_rounds_like_python_decimal() {
        // Decimal(3.3) + Decimal(3.3) + Decimal(3.3) == Decimal('9.899999999999999467092948180')
        let step = Dec::from_f64(3.3).unwrap();
        let mut acc = Dec::from_i64(0);
        for _ in 0..3 {
            acc = acc.add(&step);
        }
        assert_eq!(acc.to_f64(), 9.9);
        assert!(acc < Dec::from_i64(10));
        assert!(Dec::from_i64(-1) < Dec::from_i64(0));
        assert!(Dec::from_f64(0.5).unwrap() > Dec::from_f64(0.25).unwrap());
    }
}
