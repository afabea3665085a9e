//! JSON with comments, as VS Code writes its `settings.json` and `.vscode/mcp.json`: `//` and
//! `/* */` comments and trailing commas become spaces, so the text is plain JSON whose every
//! line and column are those of the file (an error points where the user looks).

/// `text` with its comments and trailing commas blanked out (newlines kept). Text inside
/// strings is left alone; an unterminated block comment blanks the rest of the text, which
/// the JSON parser then reports as ended too early.
pub(super) fn strip(text: &str) -> String {
    let mut out: Vec<u8> = text.as_bytes().to_vec();
    let bytes = text.as_bytes();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    };
    let (mut i, mut in_string) = (0, false);
    // The last comma outside a string with nothing but blanks since: blanked at `}` or `]`.
    // Only one after a value counts (`[,]` stays the error it is).
    let mut comma: Option<usize> = None;
    let mut after_value = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                let end = bytes[i..].iter().position(|&c| c == b'\n').map_or(bytes.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
                continue;
            }
            (b'/', Some(b'*')) => {
                let end = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + 2 + n + 2);
                blank(&mut out, i, end);
                i = end;
                continue;
            }
            (b'"', _) => {
                in_string = true;
                comma = None;
                after_value = true;
            }
            (b',', _) => {
                comma = after_value.then_some(i);
                after_value = false;
            }
            (b'}' | b']', _) => {
                if let Some(at) = comma.take() {
                    out[at] = b' ';
                }
                after_value = true;
            }
            (b'{' | b'[' | b':', _) => {
                comma = None;
                after_value = false;
            }
            (c, _) if c.is_ascii_whitespace() => {}
            _ => {
                comma = None;
                after_value = true;
            }
        }
        i += 1;
    }
    // Only ASCII bytes outside strings were replaced, by ASCII: still UTF-8.
    String::from_utf8(out).expect("blanking ASCII keeps UTF-8")
}

#[cfg(test)]
mod tests {
    use super::strip;

    #[test]
    fn comments_and_trailing_commas_become_blanks_and_strings_are_untouched() {
        let text = "{\n  // a note\n  \"a\": \"http://x/*y*/\", /* block\n spanning */ \"b\": [1, 2,],\n}\n";
        let plain = strip(text);
        assert_eq!(plain.len(), text.len());
        assert_eq!(plain.lines().count(), text.lines().count());
        let v: serde_json::Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(v, serde_json::json!({"a": "http://x/*y*/", "b": [1, 2]}));
        // An escaped quote does not end a string; a comma between values stays.
        let v: serde_json::Value = serde_json::from_str(&strip(r#"{"a": "x\"//y", "b": 1}"#)).unwrap();
        assert_eq!(v["a"], "x\"//y");
        // What is not JSON once comments are gone stays an error, at the same place.
        let e = serde_json::from_str::<serde_json::Value>(&strip("{\n  // c\n  \"a\" 1\n}")).unwrap_err();
        assert_eq!((e.line(), e.column()), (3, 7));
        assert!(serde_json::from_str::<serde_json::Value>(&strip("{\"a\": 1 /* open")).is_err());
        assert!(serde_json::from_str::<serde_json::Value>(&strip("[,]")).is_err());
    }
}
