//! HTML escaping: every text the page shows (source lines, names, numbers) goes
//! through [`text`] or [`attr`], so a `<` in a kernel's source stays a `<`.

/// `s` as HTML text: `&`, `<` and `>` escaped.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` inside a double-quoted attribute: [`text`] and the quotes.
pub fn attr(s: &str) -> String {
    text(s).replace('"', "&quot;").replace('\'', "&#39;")
}

/// `s` as an `id`: letters, digits and `-` only (`transpose/naive-write` ->
/// `k-transpose-naive-write`), so links to it need no escaping.
pub fn id(prefix: &str, s: &str) -> String {
    let body: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("{prefix}-{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_and_attributes_is_escaped() {
        assert_eq!(text("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
        assert_eq!(attr("x=\"1\" 'y'"), "x=&quot;1&quot; &#39;y&#39;");
        assert_eq!(id("k", "transpose/naive-write"), "k-transpose-naive-write");
        assert_eq!(id("k", "sgemm/<x>"), "k-sgemm--x-");
    }
}
