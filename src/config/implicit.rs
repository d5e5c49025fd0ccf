//! YAML 1.1 implicit scalar shapes (ints, floats, timestamps), recognised by hand.
//!
//! These are the regexes of PyYAML's resolver and of nrl's OmegaConf-dialect loader, written
//! as small byte scanners: every `nrl` process types plain scalars, and compiling the
//! regexes cost more than the rest of loading a recipe. The tests check each scanner
//! against its regex, exhaustively on short strings and with generated near-misses.
//! Like the regexes (anchored with `^…$`), they look at the whole string: a trailing
//! newline is the caller's business.

/// A position in the bytes of the scalar; each alternative scans from its own copy.
#[derive(Clone, Copy)]
struct Cur<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn new(text: &'a str) -> Cur<'a> {
        Cur {
            s: text.as_bytes(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn end(&self) -> bool {
        self.i == self.s.len()
    }

    /// Consume `b` if it is next.
    fn eat(&mut self, b: u8) -> bool {
        self.one(|x| x == b)
    }

    /// Consume one byte satisfying `f`.
    fn one(&mut self, f: impl Fn(u8) -> bool) -> bool {
        match self.peek() {
            Some(b) if f(b) => {
                self.i += 1;
                true
            }
            _ => false,
        }
    }

    /// Consume every following byte satisfying `f`; how many.
    fn many(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.i;
        while self.one(&f) {}
        self.i - start
    }

    /// Consume `lit` if it is next.
    fn lit(&mut self, lit: &str) -> bool {
        let ok = self.s[self.i..].starts_with(lit.as_bytes());
        if ok {
            self.i += lit.len();
        }
        ok
    }

    /// `[-+]?`
    fn sign(mut self) -> Self {
        self.one(|b| b == b'-' || b == b'+');
        self
    }

    /// `[0-9][0-9_]*`
    fn digits_(&mut self) -> bool {
        self.one(digit) && {
            self.many(digit_);
            true
        }
    }

    /// `(?::[0-5]?[0-9])+`: base-60 groups. Greedy is exact here: what follows a group is
    /// never a digit.
    fn sexagesimal(&mut self) -> bool {
        let mut groups = 0;
        loop {
            let save = *self;
            let group = self.eat(b':')
                && ((self.one(|b| (b'0'..=b'5').contains(&b)) && self.one(digit)) || {
                    *self = save;
                    self.eat(b':') && self.one(digit)
                });
            if !group {
                *self = save;
                return groups > 0;
            }
            groups += 1;
        }
    }

    /// `[eE][-+]?[0-9]+`, or with the sign required (`[eE][-+][0-9]+`, PyYAML).
    fn exponent(&mut self, sign_required: bool) -> bool {
        self.one(|b| b == b'e' || b == b'E')
            && (self.one(|b| b == b'-' || b == b'+') || !sign_required)
            && self.many(digit) > 0
    }

    /// An optional exponent followed by the end.
    fn exponent_then_end(mut self, sign_required: bool) -> bool {
        self.end() || (self.exponent(sign_required) && self.end())
    }
}

fn digit(b: u8) -> bool {
    b.is_ascii_digit()
}

fn digit_(b: u8) -> bool {
    b.is_ascii_digit() || b == b'_'
}

fn try_alt<'a>(c: Cur<'a>, f: impl FnOnce(&mut Cur<'a>) -> bool) -> bool {
    let mut c = c;
    f(&mut c)
}

/// A YAML 1.1 int (both resolvers):
/// `[-+]?(?:0b[0-1_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(?::[0-5]?[0-9])+)`.
pub fn is_int(text: &str) -> bool {
    let body = Cur::new(text).sign();
    let nonzero = |b: u8| (b'1'..=b'9').contains(&b);
    try_alt(body, |c| {
        c.lit("0b") && c.many(|b| b == b'0' || b == b'1' || b == b'_') > 0 && c.end()
    }) || try_alt(body, |c| {
        c.eat(b'0') && c.many(|b| (b'0'..=b'7').contains(&b) || b == b'_') > 0 && c.end()
    }) || try_alt(body, |c| c.eat(b'0') && c.end())
        || try_alt(body, |c| {
            c.lit("0x") && c.many(|b| b.is_ascii_hexdigit() || b == b'_') > 0 && c.end()
        })
        || try_alt(body, |c| {
            c.one(nonzero) && {
                c.many(digit_);
                c.end() || (c.sexagesimal() && c.end())
            }
        })
}

/// A float as nrl's OmegaConf-dialect loader types it: PyYAML's YAML 1.1 float, plus
/// OmegaConf's `1e3` (no dot) and an optional exponent sign.
pub fn is_float(text: &str) -> bool {
    let start = Cur::new(text);
    let signed = start.sign();
    try_alt(signed, |c| {
        c.digits_() && c.eat(b'.') && {
            c.many(digit_);
            c.exponent_then_end(false)
        }
    }) || try_alt(signed, |c| c.digits_() && c.exponent(false) && c.end())
        || try_alt(start, |c| {
            c.eat(b'.') && c.many(digit_) > 0 && c.exponent_then_end(false)
        })
        || sexagesimal_float(signed)
        || special_float(start, signed)
}

/// `[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*`
fn sexagesimal_float(signed: Cur) -> bool {
    try_alt(signed, |c| {
        c.digits_() && c.sexagesimal() && c.eat(b'.') && {
            c.many(digit_);
            c.end()
        }
    })
}

/// `[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)`
fn special_float(start: Cur, signed: Cur) -> bool {
    let word =
        |c: &mut Cur, words: [&str; 3]| words.iter().any(|w| try_alt(*c, |c| c.lit(w) && c.end()));
    try_alt(signed, |c| c.eat(b'.') && word(c, ["inf", "Inf", "INF"]))
        || try_alt(start, |c| c.eat(b'.') && word(c, ["nan", "NaN", "NAN"]))
}

/// A float as PyYAML's resolver types it (the exponent needs a dot and a sign).
fn is_pyyaml_float(text: &str) -> bool {
    let start = Cur::new(text);
    let signed = start.sign();
    try_alt(signed, |c| {
        c.digits_() && c.eat(b'.') && {
            c.many(digit_);
            c.exponent_then_end(true)
        }
    }) || try_alt(start, |c| {
        c.eat(b'.') && c.digits_() && c.exponent_then_end(true)
    }) || sexagesimal_float(signed)
        || special_float(start, signed)
}

/// A YAML 1.1 timestamp: `YYYY-MM-DD`, or a date and a time with optional fraction and
/// zone (`2001-12-14t21:59:43.10-05:00`, `2001-12-14 21:59:43.10 -5`).
fn is_timestamp(text: &str) -> bool {
    let mut c = Cur::new(text);
    let four = (0..4).all(|_| c.one(digit));
    if !(four && c.eat(b'-')) {
        return false;
    }
    let one_or_two = |c: &mut Cur| {
        let first = c.one(digit);
        if first {
            c.one(digit);
        }
        first
    };
    let two = |c: &mut Cur| c.one(digit) && c.one(digit);
    try_alt(c, |c| two(c) && c.eat(b'-') && two(c) && c.end())
        || try_alt(c, |c| {
            let date = one_or_two(c) && c.eat(b'-') && one_or_two(c);
            let sep = c.one(|b| b == b'T' || b == b't') || c.many(|b| b == b' ' || b == b'\t') > 0;
            let time = one_or_two(c) && c.eat(b':') && two(c) && c.eat(b':') && two(c);
            if !(date && sep && time) {
                return false;
            }
            if c.eat(b'.') {
                c.many(digit);
            }
            let before_zone = *c;
            c.many(|b| b == b' ' || b == b'\t');
            let zone = c.eat(b'Z')
                || (c.one(|b| b == b'-' || b == b'+') && one_or_two(c) && {
                    let save = *c;
                    if !(c.eat(b':') && two(c)) {
                        *c = save;
                    }
                    true
                });
            if !zone {
                *c = before_zone;
            }
            c.end()
        })
}

/// A YAML 1.1 bool or null word: how PyYAML's resolver, OmegaConf's loader and nrl's
/// emitter all read `yes`, `Off`, `NULL` and the like written plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yaml11Word {
    Bool(bool),
    Null,
}

/// The YAML 1.1 bool and null words, the only implicit values that start with a letter.
/// (`~` and the empty string are null too, but they are not words.)
pub fn yaml11_word(text: &str) -> Option<Yaml11Word> {
    match text {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Some(Yaml11Word::Bool(true))
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Some(Yaml11Word::Bool(false))
        }
        "null" | "Null" | "NULL" => Some(Yaml11Word::Null),
        _ => None,
    }
}

/// Whether PyYAML's resolver (YAML 1.1 implicit types) reads `text` as something other
/// than a string when written plain: a bool or null word, int, float, timestamp, merge
/// key (`<<`), value (`=`) or yaml (`!`, `&`, `*`) indicator, or the empty string.
pub fn is_pyyaml_implicit(text: &str) -> bool {
    matches!(text, "" | "<<" | "~" | "=" | "!" | "&" | "*")
        || yaml11_word(text).is_some()
        || is_int(text)
        || is_pyyaml_float(text)
        || is_timestamp(text)
}

#[cfg(test)]
#[path = "implicit_tests.rs"]
mod tests;
