//! A small SVG chart: linear axes with ticks and labels, lines, bars, markers and a legend,
//! drawn as inline SVG text (no script, no font or style from elsewhere), so a report page is
//! one file that renders anywhere.

use std::fmt::Write as _;

/// Colours of the series, in order (readable on white, distinct in grey too).
pub(crate) const PALETTE: [&str; 6] = ["#1f5fa8", "#c0392b", "#2e8b57", "#7d3c98", "#d35400", "#555555"];

/// `text` safe inside SVG or HTML text and attributes.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number as a tick or value label: no more digits than it needs.
pub(crate) fn num(v: f64) -> String {
    let text = match v.abs() {
        a if a >= 100.0 => return format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    };
    match text.trim_end_matches('0').trim_end_matches('.') {
        "" | "-" | "-0" => "0".into(),
        t => t.to_owned(),
    }
}

/// One chart: a plot area with an x and a y axis, each linear over a range.
pub(crate) struct Chart {
    id: String,
    title: String,
    width: f64,
    height: f64,
    x: (f64, f64),
    y: (f64, f64),
    labels: (String, String),
    body: String,
    legend: Vec<(String, String)>,
    /// Whether the x axis gets numeric ticks (not when groups are named instead).
    x_ticks: bool,
}

/// Margins around the plot area: left, right, top (the title, and the legend under it),
/// bottom.
const MARGIN: (f64, f64, f64, f64) = (56.0, 16.0, 48.0, 44.0);

impl Chart {
    /// A chart `id` titled `title`, `width` x `height` pixels, over `x` and `y` (each
    /// (low, high); a flat range is widened), its axes labelled `labels`.
    pub(crate) fn new(
        id: &str,
        title: &str,
        size: (f64, f64),
        x: (f64, f64),
        y: (f64, f64),
        labels: (&str, &str),
    ) -> Chart {
        let widen = |(lo, hi): (f64, f64)| if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        Chart {
            id: id.into(),
            title: title.into(),
            width: size.0,
            height: size.1,
            x: widen(x),
            y: widen(y),
            labels: (labels.0.into(), labels.1.into()),
            body: String::new(),
            legend: Vec::new(),
            x_ticks: true,
        }
    }

    /// Leaves the x axis without numeric ticks (groups named by the caller instead).
    pub(crate) fn no_x_ticks(&mut self) {
        self.x_ticks = false;
    }

    /// The pixel x of a value.
    fn px(&self, v: f64) -> f64 {
        let (l, r) = (MARGIN.0, self.width - MARGIN.1);
        l + (v - self.x.0) / (self.x.1 - self.x.0) * (r - l)
    }

    /// The pixel y of a value.
    fn py(&self, v: f64) -> f64 {
        let (t, b) = (MARGIN.2, self.height - MARGIN.3);
        b - (v - self.y.0) / (self.y.1 - self.y.0) * (b - t)
    }

    /// A line through `points`, with a dot at each when `dots`.
    pub(crate) fn line(&mut self, points: &[(f64, f64)], colour: &str, dashed: bool, dots: bool) {
        if points.is_empty() {
            return;
        }
        let d: Vec<String> = points.iter().map(|&(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y))).collect();
        let dash = if dashed { " stroke-dasharray=\"5 4\"" } else { "" };
        let _ = write!(
            self.body,
            "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>",
            d.join(" ")
        );
        if dots {
            for &(x, y) in points {
                let _ = write!(
                    self.body,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>",
                    self.px(x),
                    self.py(y)
                );
            }
        }
    }

    /// A bar from `x0` to `x1`, from the x axis (or the y range's low end) up to `y`.
    pub(crate) fn bar(&mut self, x0: f64, x1: f64, y: f64, colour: &str, tip: &str) {
        let (left, right) = (self.px(x0), self.px(x1));
        let (top, base) = (self.py(y), self.py(self.y.0.max(0.0).min(self.y.1)));
        let _ = write!(
            self.body,
            "<rect class=\"bar\" x=\"{left:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{}</title></rect>",
            top.min(base),
            (right - left).max(0.5),
            (base - top).abs(),
            esc(tip)
        );
    }

    /// A vertical marker at `x`, labelled at its top: on its left with `left`, else its right.
    pub(crate) fn vline(&mut self, x: f64, colour: &str, label: &str, left: bool) {
        let (px, top, bottom) = (self.px(x), MARGIN.2, self.height - MARGIN.3);
        let (tx, anchor) = if left { (px - 3.0, "end") } else { (px + 3.0, "start") };
        let _ = write!(
            self.body,
            "<line class=\"marker\" x1=\"{px:.1}\" y1=\"{top:.1}\" x2=\"{px:.1}\" y2=\"{bottom:.1}\" stroke=\"{colour}\" \
             stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/><text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"11\" \
             text-anchor=\"{anchor}\" fill=\"{colour}\">{}</text>",
            top + 11.0,
            esc(label)
        );
    }

    /// A legend entry.
    pub(crate) fn key(&mut self, colour: &str, label: &str) {
        self.legend.push((colour.into(), label.into()));
    }

    /// The chart as an `<svg>` element.
    pub(crate) fn finish(self) -> String {
        let (w, h) = (self.width, self.height);
        let mut s = format!(
            "<svg id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\">",
            esc(&self.id),
            esc(&self.title)
        );
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>",
            MARGIN.0,
            esc(&self.title)
        );
        let (left, right, top, bottom) = (MARGIN.0, w - MARGIN.1, MARGIN.2, h - MARGIN.3);
        for i in 0..=4 {
            let f = i as f64 / 4.0;
            let (xv, yv) = (self.x.0 + f * (self.x.1 - self.x.0), self.y.0 + f * (self.y.1 - self.y.0));
            let (x, y) = (self.px(xv), self.py(yv));
            let _ = write!(
                s,
                "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{right:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>\
                 ",
                left - 4.0,
                y + 4.0,
                num(yv),
            );
            if self.x_ticks {
                let _ = write!(
                    s,
                    "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                    bottom + 15.0,
                    num(xv)
                );
            }
        }
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{left}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" stroke=\"#333\"/>\
             <line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom}\" stroke=\"#333\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\
             <text x=\"14\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">{}</text>",
            (left + right) / 2.0,
            h - 8.0,
            esc(&self.labels.0),
            (top + bottom) / 2.0,
            (top + bottom) / 2.0,
            esc(&self.labels.1)
        );
        s.push_str(&self.body);
        // The legend in a row under the title, clear of the plot.
        let mut x = left;
        for (colour, label) in &self.legend {
            let _ = write!(
                s,
                "<g class=\"legend\"><rect x=\"{x:.1}\" y=\"26\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
                 <text x=\"{:.1}\" y=\"35\" font-size=\"11\">{}</text></g>",
                x + 14.0,
                esc(label)
            );
            x += 26.0 + 6.2 * label.chars().count() as f64;
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_map_into_the_plot_area_and_text_is_escaped() {
        let mut c = Chart::new("c", "a <b> & \"c\"", (400.0, 300.0), (0.0, 10.0), (0.0, 1.0), ("x", "y"));
        assert_eq!((c.px(0.0), c.px(10.0)), (MARGIN.0, 400.0 - MARGIN.1));
        assert_eq!((c.py(0.0), c.py(1.0)), (300.0 - MARGIN.3, MARGIN.2));
        c.line(&[(0.0, 0.0), (10.0, 1.0)], PALETTE[0], false, true);
        c.bar(1.0, 2.0, 0.5, PALETTE[1], "half");
        let svg = c.finish();
        assert!(svg.starts_with("<svg id=\"c\"") && svg.ends_with("</svg>"));
        assert!(svg.contains("a &lt;b&gt; &amp; &quot;c&quot;") && !svg.contains("<b>"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 1);
        assert_eq!(
            (num(0.25), num(12.5), num(1500.0), num(0.0)),
            ("0.25".into(), "12.5".into(), "1500".into(), "0".into())
        );
    }
}
