//! Ray's logs answer (`{"logs": "<the whole driver log>"}`) decoded as it arrives: the
//! `logs` string is unescaped chunk by chunk and handed on, so a 20 MB log costs a chunk
//! of memory, not three copies of the log (the body, the parsed string, the output).
//!
//! Other top-level keys are skipped (a JSON value of any shape); a body that is not an
//! object holding a `logs` string is an error, as `serde_json` would report it.

/// Where the decoder is in the answer.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// Expecting a key's opening quote, or `}`.
    Key,
    /// Inside a key: the bytes so far, and whether the last one was a backslash.
    InKey(Vec<u8>, bool),
    /// After a key, expecting `:`; whether the key is `logs`.
    Colon(bool),
    /// Expecting a value; whether it is the logs.
    Value(bool),
    /// Inside the logs string.
    Logs(Escape),
    /// Skipping another key's value: nesting depth, inside a string, after a backslash.
    Skip {
        depth: u32,
        in_string: bool,
        escaped: bool,
        started: bool,
    },
    /// After a value, expecting `,` or `}`.
    AfterValue,
    /// After the closing `}`.
    End,
}

/// Where the logs string's decoder is in an escape.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Escape {
    None,
    Backslash,
    /// `\u` and the hex digits read so far (count, value).
    Unicode(u8, u32),
}

/// Decodes the logs answer incrementally: [`LogsDecoder::feed`] each chunk of the body,
/// then [`LogsDecoder::finish`].
#[derive(Debug)]
pub struct LogsDecoder {
    state: State,
    /// A high surrogate waiting for its pair (`\ud83d\ude00`).
    high: Option<u32>,
    found: bool,
}

impl Default for LogsDecoder {
    fn default() -> Self {
        LogsDecoder {
            state: State::Start,
            high: None,
            found: false,
        }
    }
}

/// A malformed answer, with what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLogs(pub String);

impl std::fmt::Display for BadLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad<T>(what: &str, byte: u8) -> Result<T, BadLogs> {
    Err(BadLogs(format!(
        "expected {what}, found {:?}",
        char::from(byte)
    )))
}

impl LogsDecoder {
    /// Decode `chunk`, appending the log text it holds to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), BadLogs> {
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            // The hot path: a run of plain log bytes is copied whole.
            if self.state == State::Logs(Escape::None) && self.high.is_none() {
                let run = chunk[i..]
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\')
                    .unwrap_or(chunk.len() - i);
                if run > 0 {
                    out.extend_from_slice(&chunk[i..i + run]);
                    i += run;
                    continue;
                }
            }
            self.step(b, out)?;
            i += 1;
        }
        Ok(())
    }

    /// The answer is complete: an error if it ended early or held no `logs` string.
    pub fn finish(self) -> Result<(), BadLogs> {
        if self.state != State::End {
            return Err(BadLogs("the answer ended before its closing `}`".into()));
        }
        if !self.found {
            return Err(BadLogs("the answer has no `logs` field".into()));
        }
        Ok(())
    }

    fn step(&mut self, b: u8, out: &mut Vec<u8>) -> Result<(), BadLogs> {
        let ws = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match &mut self.state {
            State::Start if ws => {}
            State::Start if b == b'{' => self.state = State::Key,
            State::Start => return bad("`{`", b),
            State::Key if ws => {}
            State::Key if b == b'"' => self.state = State::InKey(Vec::new(), false),
            State::Key if b == b'}' => self.state = State::End,
            State::Key => return bad("a key", b),
            State::InKey(key, escaped) => {
                if *escaped {
                    *escaped = false;
                    key.push(b);
                } else if b == b'\\' {
                    *escaped = true;
                    key.push(b);
                } else if b == b'"' {
                    let is_logs = key.as_slice() == b"logs";
                    self.state = State::Colon(is_logs);
                } else {
                    key.push(b);
                }
            }
            State::Colon(_) if ws => {}
            State::Colon(is_logs) if b == b':' => self.state = State::Value(*is_logs),
            State::Colon(_) => return bad("`:`", b),
            State::Value(_) if ws => {}
            State::Value(true) if b == b'"' => {
                self.found = true;
                self.state = State::Logs(Escape::None);
            }
            State::Value(true) => return bad("the logs as a string", b),
            State::Value(false) => {
                self.state = State::Skip {
                    depth: 0,
                    in_string: false,
                    escaped: false,
                    started: false,
                };
                return self.step(b, out);
            }
            State::Logs(escape) => {
                let escape = *escape;
                self.logs_byte(escape, b, out)?;
            }
            State::Skip {
                depth,
                in_string,
                escaped,
                started,
            } => {
                if *in_string {
                    if *escaped {
                        *escaped = false;
                    } else if b == b'\\' {
                        *escaped = true;
                    } else if b == b'"' {
                        *in_string = false;
                        if *depth == 0 {
                            self.state = State::AfterValue;
                        }
                    }
                } else {
                    match b {
                        b'"' => {
                            *in_string = true;
                            *started = true;
                        }
                        b'{' | b'[' => {
                            *depth += 1;
                            *started = true;
                        }
                        b'}' | b']' if *depth > 0 => {
                            *depth -= 1;
                            if *depth == 0 {
                                self.state = State::AfterValue;
                            }
                        }
                        // A scalar (number, true, false, null) ends at what follows it.
                        b',' | b'}' if *depth == 0 && *started => {
                            self.state = State::AfterValue;
                            return self.step(b, out);
                        }
                        _ if ws => {}
                        _ => *started = true,
                    }
                }
            }
            State::AfterValue if ws => {}
            State::AfterValue if b == b',' => self.state = State::Key,
            State::AfterValue if b == b'}' => self.state = State::End,
            State::AfterValue => return bad("`,` or `}`", b),
            State::End if ws => {}
            State::End => return bad("the end of the answer", b),
        }
        Ok(())
    }

    fn logs_byte(&mut self, escape: Escape, b: u8, out: &mut Vec<u8>) -> Result<(), BadLogs> {
        match escape {
            Escape::None => match b {
                b'"' => {
                    self.flush_surrogate(out);
                    self.state = State::AfterValue;
                }
                b'\\' => self.state = State::Logs(Escape::Backslash),
                _ => {
                    self.flush_surrogate(out);
                    out.push(b);
                }
            },
            Escape::Backslash => {
                let plain = match b {
                    b'n' => Some(b'\n'),
                    b't' => Some(b'\t'),
                    b'r' => Some(b'\r'),
                    b'b' => Some(0x08),
                    b'f' => Some(0x0c),
                    b'/' => Some(b'/'),
                    b'\\' => Some(b'\\'),
                    b'"' => Some(b'"'),
                    b'u' => None,
                    _ => return bad("an escape (\\n, \\\", \\uXXXX, …)", b),
                };
                match plain {
                    Some(c) => {
                        self.flush_surrogate(out);
                        out.push(c);
                        self.state = State::Logs(Escape::None);
                    }
                    None => self.state = State::Logs(Escape::Unicode(0, 0)),
                }
            }
            Escape::Unicode(n, value) => {
                let Some(digit) = char::from(b).to_digit(16) else {
                    return bad("a hex digit of a \\u escape", b);
                };
                let value = (value << 4) | digit;
                if n < 3 {
                    self.state = State::Logs(Escape::Unicode(n + 1, value));
                    return Ok(());
                }
                self.state = State::Logs(Escape::None);
                self.code_unit(value, out);
            }
        }
        Ok(())
    }

    /// One UTF-16 code unit of a `\u` escape: surrogate pairs join; a lone surrogate
    /// becomes U+FFFD (Ray decodes log files with replacement too).
    fn code_unit(&mut self, unit: u32, out: &mut Vec<u8>) {
        match (self.high.take(), unit) {
            (Some(high), 0xDC00..=0xDFFF) => {
                let c = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                push_char(char::from_u32(c).unwrap_or('\u{FFFD}'), out);
            }
            (previous, 0xD800..=0xDBFF) => {
                if previous.is_some() {
                    push_char('\u{FFFD}', out);
                }
                self.high = Some(unit);
            }
            (previous, _) => {
                if previous.is_some() {
                    push_char('\u{FFFD}', out);
                }
                push_char(char::from_u32(unit).unwrap_or('\u{FFFD}'), out);
            }
        }
    }

    fn flush_surrogate(&mut self, out: &mut Vec<u8>) {
        if self.high.take().is_some() {
            push_char('\u{FFFD}', out);
        }
    }
}

fn push_char(c: char, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode `body` fed in pieces of `step` bytes.
    fn decode(body: &[u8], step: usize) -> Result<Vec<u8>, BadLogs> {
        let mut d = LogsDecoder::default();
        let mut out = Vec::new();
        for piece in body.chunks(step.max(1)) {
            d.feed(piece, &mut out)?;
        }
        d.finish()?;
        Ok(out)
    }

    #[test]
    fn matches_serde_json_however_the_body_is_cut() {
        let logs = "line 1\nquote \" backslash \\ tab\t slash / ctrl \u{1} é 日本 😀 \r\nend";
        let body = serde_json::to_vec(&serde_json::json!({ "logs": logs })).unwrap();
        // Python's json.dumps escapes non-ASCII as \uXXXX (surrogate pairs for 😀).
        let ascii = body_ascii(logs);
        for step in [1, 2, 3, 5, 7, 64, body.len()] {
            assert_eq!(decode(&body, step).unwrap(), logs.as_bytes(), "step {step}");
            assert_eq!(
                decode(ascii.as_bytes(), step).unwrap(),
                logs.as_bytes(),
                "ascii step {step}"
            );
        }
    }

    /// The answer as Python's `json.dumps` writes it (`ensure_ascii=True`).
    fn body_ascii(logs: &str) -> String {
        let mut s = String::from("{\"logs\": \"");
        for unit in logs.encode_utf16() {
            match unit {
                0x22 => s.push_str("\\\""),
                0x5c => s.push_str("\\\\"),
                0x0a => s.push_str("\\n"),
                0x0d => s.push_str("\\r"),
                0x09 => s.push_str("\\t"),
                0x20..=0x7e => s.push(char::from(unit as u8)),
                _ => s.push_str(&format!("\\u{unit:04x}")),
            }
        }
        s.push_str("\"}");
        s
    }

    #[test]
    fn other_keys_are_skipped_whatever_their_shape() {
        let body = br#" { "a": {"x": [1, "}\"", {"y": null}]}, "n": -1.5e3, "t": true, "logs": "ok\n", "z": "s" } "#;
        for step in [1, 4, body.len()] {
            assert_eq!(decode(body, step).unwrap(), b"ok\n");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(
            decode(br#"{"logs": "a\ud800b\udc00c"}"#, 3).unwrap(),
            "a\u{FFFD}b\u{FFFD}c".as_bytes()
        );
    }

    #[test]
    fn malformed_answers_are_errors() {
        for body in [
            &br#"["logs"]"#[..],
            br#"{"logs": 5}"#,
            br#"{"logs": "cut"#,
            br#"{"other": 1}"#,
            br#"{"logs": "\q"}"#,
            br#"{"logs": "\u12g4"}"#,
            br#"{"logs": "x"} extra"#,
        ] {
            assert!(
                decode(body, 2).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
