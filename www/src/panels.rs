//! The page's panels, one registry: each names its sidebar entry, its group and the section it shows. The
//! sidebar is generated from it, and switching panels goes through it, so a new panel (agent sessions,
//! calibration, findings) is one `Panel` implementation in a file of its own plus one line here.

use crate::components::table::esc;

/// The sidebar's groups in order (docs/LAB-DESIGN shape: Serve, Decide, Prove, Agents, Ground truth).
pub const GROUPS: &[&str] = &["Serve", "Decide", "Prove", "Agents", "Ground truth"];

/// The sidebar's "Start here" path, in order, with what each step answers: one run, the rate a configuration
/// sustains, the fleet a load needs.
const START: &[(&str, &str)] = &[
    ("lab", "One scenario, one run: is it a capacity or a queueing problem, and which change fixes it"),
    ("capacity", "The highest rate this configuration serves with its queue bounded"),
    ("fleet", "How many GPUs of which kind a load needs, and what they cost"),
];

/// A panel of the page.
pub trait Panel {
    /// Its name in links (`#panel=NAME`) and in `data-panel`.
    fn name(&self) -> &'static str;
    fn title(&self) -> &'static str;
    /// One of `GROUPS`.
    fn group(&self) -> &'static str;
    /// The id of the `<section>` it shows; sections not shown are hidden.
    fn section(&self) -> &'static str;
}

/// Which panel is on screen: the Serving Lab, a study's, or Calibration. Links and the sidebar name it by
/// [`PanelId::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PanelId {
    Lab,
    Study(inferscale::study::Kind),
    Calibration,
    Findings,
}

impl PanelId {
    pub fn name(self) -> &'static str {
        match self {
            PanelId::Lab => LabPanel.name(),
            PanelId::Calibration => CalibrationPanel.name(),
            PanelId::Findings => FindingsPanel.name(),
            PanelId::Study(k) => k.name(),
        }
    }

    /// The panel called `name` (a link's `#panel=`, a sidebar entry's `data-panel`); an unknown name is the
    /// Serving Lab.
    pub fn from_name(name: &str) -> PanelId {
        if name == CalibrationPanel.name() {
            return PanelId::Calibration;
        }
        if name == FindingsPanel.name() {
            return PanelId::Findings;
        }
        inferscale::study::Kind::from_name(name).map_or(PanelId::Lab, PanelId::Study)
    }
}

/// The Serving Lab: one scenario, one run (its results are `lab.rs`'s).
pub struct LabPanel;

impl Panel for LabPanel {
    fn name(&self) -> &'static str {
        "lab"
    }
    fn title(&self) -> &'static str {
        "Serving Lab"
    }
    fn group(&self) -> &'static str {
        "Serve"
    }
    fn section(&self) -> &'static str {
        "panel-lab"
    }
}

/// Calibration: measured runs imported, the cost model fitted on some, the error shown on the others
/// (`calibration.rs`).
pub struct CalibrationPanel;

impl Panel for CalibrationPanel {
    fn name(&self) -> &'static str {
        "calibration"
    }
    fn title(&self) -> &'static str {
        "Calibration"
    }
    fn group(&self) -> &'static str {
        "Ground truth"
    }
    fn section(&self) -> &'static str {
        "panel-calibration"
    }
}

/// Findings: the experiment report with registered predictions (`findings.rs`).
pub struct FindingsPanel;

impl Panel for FindingsPanel {
    fn name(&self) -> &'static str {
        "findings"
    }
    fn title(&self) -> &'static str {
        "Findings"
    }
    fn group(&self) -> &'static str {
        "Ground truth"
    }
    fn section(&self) -> &'static str {
        "panel-findings"
    }
}

/// The sidebar: every panel under its group, the one on screen marked.
pub fn sidebar_html(panels: &[&dyn Panel], current: &str) -> String {
    let link = |p: &dyn Panel, title: &str| {
        let on = p.name() == current;
        let attrs = if on { " class=\"active\" aria-current=\"page\"" } else { "" };
        let hint = if title.is_empty() { String::new() } else { format!(" title=\"{}\"", esc(title)) };
        format!("<a href=\"#\" data-panel=\"{}\"{attrs}{hint}>{}</a>", p.name(), esc(p.title()))
    };
    let mut html = String::new();
    // A newcomer's path through the question the page answers, before the 25 panels by group.
    let start: Vec<(&dyn Panel, &str)> = (START.iter())
        .filter_map(|(name, why)| panels.iter().find(|p| p.name() == *name).map(|p| (*p, *why)))
        .collect();
    if start.len() == START.len() {
        html.push_str("<h2>Start here</h2><ol class=\"start\">");
        for (p, why) in start {
            html.push_str(&format!("<li>{}</li>", link(p, why)));
        }
        html.push_str("</ol>");
    }
    for g in GROUPS {
        let in_group: Vec<&&dyn Panel> = panels.iter().filter(|p| p.group() == *g).collect();
        if in_group.is_empty() {
            continue;
        }
        html.push_str(&format!("<h2>{}</h2>", esc(g)));
        for p in in_group {
            html.push_str(&link(*p, ""));
        }
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_ids_round_trip_through_their_names() {
        let mut ids = vec![PanelId::Lab, PanelId::Calibration, PanelId::Findings];
        ids.extend(inferscale::study::Kind::ALL.iter().map(|&k| PanelId::Study(k)));
        for id in ids {
            assert_eq!(PanelId::from_name(id.name()), id);
        }
        assert_eq!(PanelId::from_name("no-such-panel"), PanelId::Lab);
    }

    struct Fake(&'static str, &'static str);
    impl Panel for Fake {
        fn name(&self) -> &'static str {
            self.0
        }
        fn title(&self) -> &'static str {
            self.0
        }
        fn group(&self) -> &'static str {
            self.1
        }
        fn section(&self) -> &'static str {
            "panel-study"
        }
    }

    #[test]
    fn the_sidebar_starts_with_the_path_lab_capacity_fleet() {
        let (c, f, r) = (Fake("capacity", "Decide"), Fake("fleet", "Decide"), Fake("ranking", "Decide"));
        let panels: Vec<&dyn Panel> = vec![&LabPanel, &r, &f, &c];
        let html = sidebar_html(&panels, "fleet");
        let (path, rest) = html.split_once("</ol>").expect("a start path");
        assert!(path.starts_with("<h2>Start here</h2><ol class=\"start\"><li><a href=\"#\" data-panel=\"lab\" title="));
        let order: Vec<usize> =
            ["\"lab\"", "\"capacity\"", "\"fleet\""].iter().map(|n| path.find(n).unwrap()).collect();
        assert!(order.is_sorted(), "{path}");
        assert!(path.contains("data-panel=\"fleet\" class=\"active\" aria-current=\"page\" title=\"How many GPUs"));
        // Every panel still in its group, below.
        for n in ["lab", "ranking", "fleet", "capacity"] {
            assert!(rest.contains(&format!("data-panel=\"{n}\"")), "{n}: {rest}");
        }
    }

    #[test]
    fn the_sidebar_lists_every_panel_in_its_group_in_order() {
        let (a, b, c) = (Fake("ranking", "Decide"), Fake("paired", "Prove"), Fake("capacity", "Decide"));
        let panels: Vec<&dyn Panel> = vec![&LabPanel, &a, &b, &c];
        let html = sidebar_html(&panels, "capacity");
        assert_eq!(
            html,
            "<h2>Serve</h2><a href=\"#\" data-panel=\"lab\">Serving Lab</a><h2>Decide</h2><a href=\"#\" data-panel=\"ranking\">ranking</a><a href=\"#\" data-panel=\"capacity\" class=\"active\" aria-current=\"page\">capacity</a><h2>Prove</h2><a href=\"#\" data-panel=\"paired\">paired</a>"
        );
    }
}
