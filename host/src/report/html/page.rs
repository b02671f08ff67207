//! The page's frame: one self-contained HTML file, its styles and script inline,
//! nothing fetched. The content is all in the markup; the script only adds the
//! precision filter and the kernel search, so the page reads the same without it.

use super::escape::text;

/// The page: `title`, and `body` (markup, already escaped).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n{body}<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        text(title)
    )
}

/// The palette of waste is sequential and safe for colour-blind readers (Okabe and
/// Ito's blue, yellow, orange and vermillion, lightest for the least waste), and
/// every chip says its figures in words too.
const CSS: &str = r#":root {
  --ink: #1d2433; --muted: #5b6474; --rule: #d9dde5; --paper: #ffffff; --panel: #f6f7f9;
  --w0: #d4e8f7; --w0s: #0072b2; --w1: #f6efb0; --w1s: #c9b800;
  --w2: #f8d29a; --w2s: #e69f00; --w3: #f4b19a; --w3s: #d55e00;
  --add: #e3f1e6; --del: #f6e3e3; --renum: #eef0fb;
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--paper); }
main { max-width: 1500px; margin: 0 auto; padding: 0 24px 64px; }
header.top { padding: 20px 24px 8px; max-width: 1500px; margin: 0 auto; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 40px 0 6px; padding-top: 10px; border-top: 2px solid var(--rule); }
h3 { font-size: 17px; margin: 0 0 4px; }
h3 code { font-size: 13px; color: var(--muted); font-weight: normal; margin-left: 8px; }
p { margin: 6px 0; max-width: 100ch; }
.muted, .about { color: var(--muted); }
code, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
a { color: #0b5cad; }
nav.toc { display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 13.5px; margin: 10px 0 0; }
nav.toc div { min-width: 180px; }
nav.toc b { display: block; }
nav.toc a { text-decoration: none; margin-right: 8px; white-space: nowrap; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; font-size: 13px; margin: 8px 0; }
.swatch { display: inline-block; padding: 1px 8px; border-radius: 4px; border-left: 5px solid; }
.w0 .swatch, .swatch.w0, .site.w0 { background: var(--w0); border-color: var(--w0s); }
.swatch.w1, .site.w1 { background: var(--w1); border-color: var(--w1s); }
.swatch.w2, .site.w2 { background: var(--w2); border-color: var(--w2s); }
.swatch.w3, .site.w3 { background: var(--w3); border-color: var(--w3s); }
.filters { display: none; gap: 6px; align-items: center; margin: 8px 0; font-size: 13px; }
.js .filters { display: flex; flex-wrap: wrap; }
.filters button { font: inherit; padding: 2px 10px; border: 1px solid var(--rule); background: var(--panel); border-radius: 12px; cursor: pointer; }
.filters button[aria-pressed="true"] { background: var(--ink); color: #fff; }
.filters input { font: inherit; padding: 2px 8px; border: 1px solid var(--rule); border-radius: 4px; width: 16em; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(680px, 1fr)); gap: 10px 24px; }
figure { margin: 8px 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: 600; font-size: 14px; }
article.kernel { margin: 22px 0 30px; padding: 14px 16px; border: 1px solid var(--rule); border-radius: 8px; background: var(--paper); }
article.kernel > p.doc { color: var(--muted); font-size: 14px; }
table { border-collapse: collapse; }
table.figs { font-size: 13.5px; margin: 6px 0 10px; }
table.figs th, table.figs td { padding: 2px 10px 2px 0; text-align: left; vertical-align: top; }
table.figs th { color: var(--muted); font-weight: 600; }
table.figs td.bad { color: #b00020; font-weight: 700; }
.scroll { overflow-x: auto; }
table.src { width: 100%; font-size: 12.5px; }
table.src td { padding: 0 8px; vertical-align: top; }
td.ln { color: #8a92a1; text-align: right; user-select: none; width: 3.5em; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; border-left: 5px solid transparent; }
td.code code { white-space: pre; }
table.src td.code { width: 1%; }
tr.w0 td.ln { border-left-color: var(--w0s); }
tr.w1 td.ln { border-left-color: var(--w1s); }
tr.w2 td.ln { border-left-color: var(--w2s); }
tr.w3 td.ln { border-left-color: var(--w3s); }
tr.w0 td.code, tr.w0 td.ln { background: #f1f7fc; }
tr.w1 td.code, tr.w1 td.ln { background: #fcf9e0; }
tr.w2 td.code, tr.w2 td.ln { background: #fdf0dc; }
tr.w3 td.code, tr.w3 td.ln { background: #fbe6de; }
td.notes { min-width: 21em; }
.site { display: inline-block; margin: 1px 6px 1px 0; padding: 0 6px; border-radius: 4px; border-left: 5px solid; font-size: 12px; line-height: 1.5; }
.site .pat { color: #3b4252; }
tr.hdr td { padding: 8px 8px 2px; color: var(--muted); font-size: 12px; font-style: italic; }
p.unplaced { font-size: 12.5px; }
details { margin: 6px 0; }
details > summary { cursor: pointer; color: #0b5cad; font-size: 14px; }
details pre { background: var(--panel); padding: 8px 10px; border-radius: 6px; overflow-x: auto; max-height: 36em; }
table.diff { width: 100%; table-layout: fixed; font-size: 12px; }
table.diff th { text-align: left; font-size: 13px; padding: 4px 8px; background: var(--panel); }
table.diff td { vertical-align: top; padding: 0 6px; }
/* Each side is half the width: a long line wraps rather than hide its end. */
table.diff td.code code { white-space: pre-wrap; overflow-wrap: anywhere; }
table.diff col.lnc { width: 3.4em; }
table.diff td.code.w0 { box-shadow: inset 4px 0 var(--w0s); }
table.diff td.code.w1 { box-shadow: inset 4px 0 var(--w1s); }
table.diff td.code.w2 { box-shadow: inset 4px 0 var(--w2s); }
table.diff td.code.w3 { box-shadow: inset 4px 0 var(--w3s); }
table.diff tr.add td.code:nth-child(4), table.diff tr.chg td.code:nth-child(4) { background: var(--add); }
table.diff tr.del td.code:nth-child(2), table.diff tr.chg td.code:nth-child(2) { background: var(--del); }
table.diff tr.hdr td, table.diff td.hdr { color: var(--muted); font-style: italic; padding-top: 6px; }
table.diff tr.renum td.code { background: var(--renum); }
table.diff tr.fold td { text-align: center; color: var(--muted); font-style: italic; background: var(--panel); }
table.diff td.code .notes { white-space: normal; }
table.diff td.code .site { white-space: normal; }
table.sweep td { white-space: nowrap; }
table.sweep td.near { background: var(--w0); }
table.sweep td.far { background: var(--w3); }
table.sweep-summary td:nth-child(n+2):not(:last-child) { text-align: right; }
p.same { font-style: italic; color: var(--muted); }
.step { margin-top: 12px; }
"#;

const SCRIPT: &str = r#"(function () {
  document.documentElement.classList.add("js");
  var buttons = document.querySelectorAll("[data-filter]");
  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      var want = b.getAttribute("data-filter");
      document.querySelectorAll("[data-precision]").forEach(function (el) {
        el.hidden = !(want === "all" || el.getAttribute("data-precision") === want);
      });
      buttons.forEach(function (x) { x.setAttribute("aria-pressed", x === b ? "true" : "false"); });
    });
  });
  var find = document.getElementById("find");
  if (find) {
    find.addEventListener("input", function () {
      var q = find.value.trim().toLowerCase();
      document.querySelectorAll("article.kernel").forEach(function (a) {
        var name = (a.getAttribute("data-kernel") + " " + a.getAttribute("data-entry")).toLowerCase();
        a.hidden = q !== "" && name.indexOf(q) < 0;
      });
    });
  }
})();
"#;
