//! The Serving Lab's results: the diagnosis (what was run, what was missed), the cards, the charts, the
//! per-class table and the per-request table, and their exports: the Serving Lab panel, which owns its run
//! and its results. The scenario it runs is the editor's (`editor.rs`), shared with every panel.

use inferscale_worker::{Input, Output, Results};
use serde_json::Value;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement};

use crate::behaviour::{Behaviour, Cx, Wiring};
use crate::components::charts;
use crate::components::exports;
use crate::components::figure::{self, Figure, Fmt};
use crate::components::numbers;
use crate::components::sort::Sort;
use crate::components::table::{self, Table, esc};
use crate::page::{copy_link_to, now_ms, share_hash, window};
use crate::panels::PanelId;
use crate::workers::Pool;

/// The Serving Lab's state: its worker, the run in flight, the last results and how they are shown.
#[derive(Default)]
pub struct Lab {
    /// Its simulator: a pool of one worker.
    pool: Option<Pool>,
    run_id: u32,
    running: bool,
    started_ms: f64,
    results: Option<Results>,
    report: Value,
    table: Table,
    /// Show only the requests that missed an objective of their class.
    missed_only: bool,
    /// The per-request SLOs (ns) of each class of the scenario that ran: (name, ttft, tpot, e2e).
    ran_slos: Vec<ClassSlos>,
    sort: Sort,
    page: usize,
    /// The charts on screen: what each drew and how its pixels map to data.
    charts: Vec<Figure>,
    /// The change the diagnosis is testing on the same requests ("" while the scenario itself runs), and
    /// when that run started (for its time left).
    testing: String,
    stage_ms: f64,
}

const PAGE_ROWS: usize = 50;

/// A class's per-request SLOs in ns: (name, TTFT, TPOT, E2E).
type ClassSlos = (String, Option<u64>, Option<u64>, Option<u64>);

impl Lab {
    pub fn spawn_worker(&mut self, cx: &Cx) {
        self.pool = Some(cx.page.pool(PanelId::Lab, 1));
    }

    fn set_buttons(&self, cx: &Cx) {
        if let Ok(b) = cx.page.el("cancel").dyn_into::<web_sys::HtmlButtonElement>() {
            b.set_disabled(!self.running);
        }
        cx.editor.lab_running.set(self.running);
        cx.editor.validate(cx.page);
    }

    fn progress(&self, cx: &Cx, f: f64) {
        if let Ok(p) = cx.page.el("progress").dyn_into::<web_sys::HtmlProgressElement>() {
            p.set_value(f);
        }
    }

    pub fn show_results(&mut self, cx: &Cx, results: Results) {
        self.report = serde_json::from_str(&results.report_json).unwrap_or(Value::Null);
        self.table = Table::parse(&results.requests_csv);
        self.sort = Sort::default();
        self.page = 0;
        self.results = Some(results);
        cx.page.html("results").set_hidden(false);
        self.render_diagnosis(cx);
        self.render_cards(cx);
        self.render_charts(cx);
        self.render_classes(cx);
        self.render_table(cx);
    }

    pub fn render_diagnosis(&self, cx: &Cx) {
        let d = &self.report["diagnosis"];
        let findings: String = d["findings"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| {
                        let v = f["value"].as_f64().unwrap_or(0.0);
                        let shown = match f["unit"].as_str() {
                            Some("fraction") => format!("{:.1} %", v * 100.0),
                            Some("s") => fmt_s(v),
                            _ => format!("{v:.3}"),
                        };
                        format!("<li>{}: <b>{}</b></li>", esc(f["label"].as_str().unwrap_or("")), shown)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let warnings: String = self.report["steady"]["warnings"]
            .as_array()
            .map(|a| {
                a.iter().map(|w| format!("<p class=\"warning\">⚠ {}</p>", esc(w.as_str().unwrap_or("")))).collect()
            })
            .unwrap_or_default();
        // Lengths shorter than their fields read (a max that cuts the mean) are part of what ran.
        let lengths: String = self.report["setup"]["truncated_lengths"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| format!("<p class=\"warning\">⚠ Lengths: {}</p>", esc(t.as_str().unwrap_or(""))))
            .collect();
        let warnings = format!("{lengths}{warnings}");
        let rho = d["rho"].as_f64().map_or(String::new(), |r| format!("ρ = {r:.2} of sustained capacity; "));
        let regime = match d["regime"].as_str() {
            Some("overloaded") => {
                format!("over capacity ({rho}{:.2}× offered ÷ served)", d["load_factor"].as_f64().unwrap_or(1.0))
            }
            Some("shedding") => format!("over capacity ({rho}shedding load)"),
            _ if rho.is_empty() => "under capacity".to_string(),
            _ => format!("under capacity ({})", rho.trim_end_matches("; ")),
        };
        cx.page.el("diagnosis").set_inner_html(&format!(
            "<p class=\"ran\" id=\"ran\">Ran: {} · offered {:.2} req/s · {} requests · seed {}</p><h3 tabindex=\"-1\" id=\"diagnosis-title\">Diagnosis: {}</h3><p class=\"regime\">Regime: <b>{regime}</b> · limit: <b>{}</b></p><p>{}</p><p><b>Most likely to help:</b> {}</p>{}{warnings}<ul>{}</ul>",
            esc(self.results.as_ref().map_or("", |r| r.setup.as_str())),
            self.report["summary"]["offered_rate_rps"].as_f64().unwrap_or(0.0),
            self.report["summary"]["requests"],
            self.report["seed"],
            esc(d["kind"].as_str().unwrap_or("")),
            esc(&d["limit"].as_str().unwrap_or("").replace('_', " ")),
            esc(d["verdict"].as_str().unwrap_or("")),
            esc(d["advice"].as_str().unwrap_or("")),
            tested_table(&d["tested"], &d["length"]),
            findings
        ));
    }

    pub fn render_cards(&self, cx: &Cx) {
        let s = &self.report["summary"];
        let a = &self.report["audits"];
        let f = |v: &Value| v.as_f64().unwrap_or(0.0);
        let t = |v: &Value| fmt_s(f(v));
        let p = |v: &Value| format!("{:.1} %", f(v) * 100.0);
        let o = &self.report["objectives"];
        let st = &self.report["steady"];
        let target = o["attainment_target"].as_f64().unwrap_or(0.99);
        let attainment_label = format!("SLO attainment (target {:.1} %)", target * 100.0);
        let c = &self.report["capacity"];
        let unit = if self.report["sessions"].is_object() { "sessions/s" } else { "req/s" };
        let rho = self.report["diagnosis"]["rho"].as_f64();
        let cards = vec![
            ("Offered rate", format!("{:.2} req/s", f(&s["offered_rate_rps"])), ""),
            (
                "Achieved (steady)",
                format!("{:.2} req/s", f(&st["throughput_rps"])),
                if st["overloaded"] == true { "bad" } else { "" },
            ),
            ("Goodput (steady)", format!("{:.2} req/s", f(&st["goodput_rps"])), ""),
            ("TTFT p50", t(&s["ttft_s"]["p50"]), ""),
            ("TTFT p95", t(&s["ttft_s"]["p95"]), ""),
            ("TTFT p99", t(&s["ttft_s"]["p99"]), ""),
            ("TPOT p50", t(&s["tpot_s"]["p50"]), ""),
            ("TPOT p95", t(&s["tpot_s"]["p95"]), ""),
            ("TPOT p99", t(&s["tpot_s"]["p99"]), ""),
            ("E2E p50", t(&s["e2e_s"]["p50"]), ""),
            ("E2E p95", t(&s["e2e_s"]["p95"]), ""),
            ("E2E p99", t(&s["e2e_s"]["p99"]), ""),
            ("Throughput (whole run)", format!("{:.2} req/s", f(&s["throughput_rps"])), ""),
            ("Output tokens", format!("{:.0} tok/s", f(&s["output_tokens_per_s"])), ""),
            ("Goodput (whole run)", format!("{:.2} req/s", f(&s["goodput_rps"])), ""),
            ("SLO attainment", p(&s["slo_attainment"]), if o["attainment_met"] == true { "good" } else { "bad" }),
            ("KV peak", p(&s["kv_peak_fraction"]), ""),
            ("Preemptions", format!("{}", s["preemptions"]), ""),
            ("Rejected", rejected_card(s), ""),
            ("Unfinished", format!("{}", s["unfinished"]), ""),
            (
                "Little's law error",
                format!("{:.2} %", f(&a["little"]["relative_error"]) * 100.0),
                if a["ok"] == true { "good" } else { "bad" },
            ),
            ("GPUs", format!("{}", self.report["gpus"]), ""),
            ("Goodput/GPU", format!("{:.3} req/s", f(&s["goodput_per_gpu_rps"])), ""),
        ];
        let mut cards = cards
            .into_iter()
            .map(|(k, v, c)| (if k == "SLO attainment" { attainment_label.clone() } else { k.to_string() }, v, c))
            .collect::<Vec<_>>();
        // The configuration's sustained capacity (docs/metrics.md, "Stability") and the load set against it,
        // after the rates they compare with.
        if let (Some(mean), Some(r)) = (c["mean_rps"].as_f64(), rho) {
            let (lo, hi) = (f(&c["lo_rps"]), f(&c["hi_rps"]));
            cards.insert(3, ("Sustained capacity".into(), format!("{mean:.2} {unit} ({lo:.2} – {hi:.2})"), ""));
            cards.insert(
                4,
                ("Load ρ (offered ÷ sustained)".into(), format!("{r:.2}"), if r > 1.0 { "bad" } else { "" }),
            );
        }
        // Objectives on percentiles, as the scenario states them.
        for q in o["percentiles"].as_array().into_iter().flatten() {
            let of = q["class"].as_str().map(|c| format!(" ({c})")).unwrap_or_default();
            let metric = q["metric"].as_str().unwrap_or("").replace('_', " ").to_uppercase();
            let label = format!("p{} {metric}{of} ≤ {}", numbers::shown(&q["percentile"]), fmt_s(f(&q["max_s"])));
            cards.insert(0, (label, t(&q["value_s"]), if q["met"] == true { "good" } else { "bad" }));
        }
        // Disaggregated and prefix-sharing runs have their own figures.
        if let Some(pools) = self.report["pools"].as_array() {
            for pool in pools {
                cards.push((
                    format!("{} pool busy", pool["role"].as_str().unwrap_or("")),
                    p(&pool["busy_fraction"]),
                    "",
                ));
            }
            let tr = &self.report["transfer"];
            cards.push(("KV transfer p95".into(), t(&tr["latency_s"]["p95"]), ""));
            cards.push((
                "Busiest link".into(),
                p(&tr["link_busy_max_fraction"]),
                if f(&tr["link_busy_max_fraction"]) > 0.8 { "bad" } else { "" },
            ));
        }
        if self.report["prefix"].is_object() {
            let x = &self.report["prefix"];
            cards.push(("Prefix cache hits".into(), p(&x["hit_rate"]), ""));
            cards.push(("Prefill tokens saved".into(), format!("{}", x["prefill_tokens_saved"]), ""));
        }
        let html: String = cards
            .iter()
            .map(|(k, v, cls)| {
                // The metric's key stays stable for tests and styles; the label may carry the target.
                let key = k.split(" (target").next().unwrap_or(k);
                format!("<div class=\"card {cls}\" data-metric=\"{}\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>", esc(key), esc(k), esc(v))
            })
            .collect();
        cx.page.el("cards").set_inner_html(&html);
    }

    pub fn render_charts(&mut self, cx: &Cx) {
        let Some(r) = &self.results else { return };
        let mut figs = self.cdf_figures(r);
        figs.extend(self.series_figures());
        figs.extend(self.class_figure());
        cx.page.label_figures(&figs);
        self.charts = figs;
    }

    /// The latency CDFs with their percentiles marked and the objectives drawn.
    fn cdf_figures(&self, r: &Results) -> Vec<Figure> {
        let mut figs: Vec<Figure> = Vec::new();
        let cdfs = [
            ("ttft", "TTFT", r.ttft_cdf.clone()),
            ("tpot", "TPOT", r.tpot_cdf.clone()),
            ("e2e", "E2E", r.e2e_cdf.clone()),
        ];
        for (k, (which, label, pts)) in cdfs.into_iter().enumerate() {
            let objectives = self.objective_lines(which);
            let stats = &self.report["summary"][format!("{which}_s")];
            let marks: Vec<(String, f64, f64)> = [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)]
                .iter()
                .map(|(p, f)| {
                    let v = stats[*p].as_f64().unwrap_or(0.0);
                    (format!("{p} {}", charts::secs(v)), v, *f)
                })
                .collect();
            let title = format!("{label} CDF");
            let id = format!("chart-{which}");
            if let Some(map) = charts::cdf(&id, &title, &pts, k, &objectives, &marks) {
                let marks_text: Vec<String> = marks.iter().map(|m| m.0.clone()).collect();
                let obj_text: Vec<String> = objectives.iter().map(|o| o.0.clone()).collect();
                let objs =
                    if obj_text.is_empty() { String::new() } else { format!("; objectives: {}", obj_text.join(", ")) };
                let summary =
                    format!("{title} of {} completed requests: {}{objs}", stats["count"], marks_text.join(", "));
                figs.push(Figure {
                    id,
                    kind: figure::Kind::Cdf,
                    map,
                    summary,
                    x_name: "latency".into(),
                    y_name: "share of requests at or below".into(),
                    fmt_x: Fmt::Secs,
                    fmt_y: Fmt::Pct,
                    categories: vec![],
                    series: vec![one(label, pts)],
                });
            }
        }
        figs
    }

    /// The queue and the KV cache over time.
    fn series_figures(&self) -> Vec<Figure> {
        let series = &self.report["series"];
        let col = |k: &str| series_points(series, k);
        let mut figs: Vec<Figure> = Vec::new();
        let queue = [("waiting", col("waiting")), ("running", col("running"))];
        if let Some(map) = charts::lines(
            "chart-queue",
            "Queue and batch over time",
            "time (s)",
            "requests (window mean)",
            &queue.iter().map(|(n, p)| (*n, p.clone())).collect::<Vec<_>>(),
            None,
        ) {
            let series = queue.into_iter().map(|(n, p)| one(n, p)).collect();
            figs.push(Figure {
                id: "chart-queue".into(),
                kind: figure::Kind::Lines,
                map,
                summary: "Requests waiting and running over time (window means)".into(),
                x_name: "time (s)".into(),
                y_name: "requests".into(),
                fmt_x: Fmt::Num(1),
                fmt_y: Fmt::Num(1),
                categories: vec![],
                series,
            });
        }
        let kv = col("kv_used_fraction");
        let kv_pct: Vec<(f64, f64)> = kv.iter().map(|p| (p.0, p.1 * 100.0)).collect();
        if let Some(map) = charts::lines(
            "chart-kv",
            "KV cache use over time",
            "time (s)",
            "KV blocks in use (%)",
            &[("KV used", kv_pct)],
            Some(100.0),
        ) {
            let peak = self.report["summary"]["kv_peak_fraction"].as_f64().unwrap_or(0.0) * 100.0;
            figs.push(Figure {
                id: "chart-kv".into(),
                kind: figure::Kind::Lines,
                map,
                summary: format!("KV blocks in use over time; peak {peak:.1} %"),
                x_name: "time (s)".into(),
                y_name: "KV used".into(),
                fmt_x: Fmt::Num(1),
                fmt_y: Fmt::Pct,
                categories: vec![],
                series: vec![one("KV used", kv)],
            });
        }
        figs
    }

    /// SLO attainment per class against the target.
    fn class_figure(&self) -> Option<Figure> {
        let bars: Vec<(String, f64)> = self.report["classes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        (c["name"].as_str().unwrap_or("").to_string(), c["slo_attainment"].as_f64().unwrap_or(0.0))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let target = self.report["objectives"]["attainment_target"].as_f64().unwrap_or(0.99);
        let map =
            charts::bars("chart-class", "SLO attainment per class", "requests meeting every SLO", &bars, Some(target))?;
        let summary = format!("SLO attainment per class against the {:.1} % target", target * 100.0);
        let pts = bars.iter().enumerate().map(|(i, b)| (i as f64, b.1)).collect();
        let categories = bars.iter().map(|b| b.0.clone()).collect();
        Some(Figure {
            id: "chart-class".into(),
            kind: figure::Kind::Bars,
            map,
            summary,
            x_name: "class".into(),
            y_name: "attainment".into(),
            fmt_x: Fmt::Num(0),
            fmt_y: Fmt::Pct,
            categories,
            series: vec![one("attainment", pts)],
        })
    }

    /// The objectives drawn on a latency CDF: every class's per-request SLO on that metric, and the
    /// percentile objectives on it.
    /// The objectives on `metric`'s CDF: (label, bound in seconds, the percentile's share for an objective
    /// on a percentile; None for a class's per-request SLO).
    pub fn objective_lines(&self, metric: &str) -> Vec<(String, f64, Option<f64>)> {
        // The SLOs of the scenario that ran (captured at Run: the editor may have changed since).
        let mut out: Vec<(String, f64, Option<f64>)> = Vec::new();
        for (name, ttft, tpot, e2e) in &self.ran_slos {
            let bound = match metric {
                "ttft" => ttft,
                "tpot" => tpot,
                _ => e2e,
            };
            if let Some(ns) = bound {
                let s = *ns as f64 / 1e9;
                out.push((format!("{name} SLO {}", charts::secs(s)), s, None));
            }
        }
        for p in
            self.report["objectives"]["percentiles"].as_array().into_iter().flatten().filter(|p| p["metric"] == metric)
        {
            let of = p["class"].as_str().map(|c| format!(" {c}")).unwrap_or_default();
            let max_s = p["max_s"].as_f64().unwrap_or(0.0);
            let share = p["percentile"].as_f64().map(|x| x / 100.0);
            out.push((format!("p{}{of} ≤ {}", numbers::shown(&p["percentile"]), charts::secs(max_s)), max_s, share));
        }
        out
    }

    pub fn render_classes(&self, cx: &Cx) {
        let rows: String = self.report["classes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(c["name"].as_str().unwrap_or("")),
                    c["requests"],
                    c["completed"],
                    c["rejected"],
                    c["slo_attainment"].as_f64().unwrap_or(0.0) * 100.0,
                    c["goodput_rps"].as_f64().unwrap_or(0.0),
                    fmt_s(c["ttft_s"]["p95"].as_f64().unwrap_or(0.0)),
                    fmt_s(c["tpot_s"]["p95"].as_f64().unwrap_or(0.0)),
                    fmt_s(c["e2e_s"]["p95"].as_f64().unwrap_or(0.0)),
                )
            })
            .collect();
        cx.page.el("classes").set_inner_html(&format!(
            "<table><thead><tr><th>Class</th><th>Requests</th><th>Completed</th><th>Rejected</th><th>SLO attainment</th><th>Goodput (req/s)</th><th>p95 TTFT</th><th>p95 TPOT</th><th>p95 E2E</th></tr></thead><tbody>{rows}</tbody></table>"
        ));
    }

    /// Did this CSV row miss an objective of its class? The core's `missed` column says (which objective, or
    /// `not_completed`); empty: it met them.
    pub fn row_missed(&self, row: &[String]) -> bool {
        let at = self.table.header.iter().position(|h| h == "missed");
        at.and_then(|i| row.get(i)).is_some_and(|m| !m.is_empty())
    }

    pub fn render_table(&self, cx: &Cx) {
        let t = &self.table;
        let head: String = t
            .header
            .iter()
            .enumerate()
            .map(|(i, h)| self.sort.th("data-col", i, &esc(&table::display_header(h)), h))
            .collect();
        let rows = t.view(|r| !self.missed_only || self.row_missed(r));
        let pages = table::pages(rows.len(), PAGE_ROWS);
        let page = self.page.min(pages - 1);
        let body: String = table::page(&rows, page, PAGE_ROWS)
            .iter()
            .map(|r| {
                format!(
                    "<tr>{}</tr>",
                    r.iter()
                        .zip(&t.header)
                        .map(|(c, h)| format!("<td>{}</td>", esc(&table::display_cell(h, c))))
                        .collect::<String>()
                )
            })
            .collect();
        let checked = if self.missed_only { " checked" } else { "" };
        let what = if self.missed_only { "requests that missed an objective" } else { "requests" };
        cx.page.el("requests").set_inner_html(&format!(
            "<div class=\"pager\"><button type=\"button\" data-page=\"prev\">Previous</button><span id=\"page-info\">Page {} of {pages} ({} {what})</span><button type=\"button\" data-page=\"next\">Next</button><label class=\"inline\"><input type=\"checkbox\" id=\"missed-only\" data-filter=\"missed\"{checked}> Only requests that missed an objective</label></div><div class=\"table-wrap\"><table id=\"request-table\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>",
            page + 1,
            rows.len()
        ));
    }

    pub fn table_click(&mut self, cx: &Cx, target: &Element) {
        if let Some(col) = target.get_attribute("data-col").and_then(|c| c.parse::<usize>().ok()) {
            self.sort.click(col);
            self.table.sort(col, self.sort.desc);
            self.page = 0;
            self.render_table(cx);
        } else if target.get_attribute("data-filter").is_some() {
            self.missed_only = target.clone().dyn_into::<HtmlInputElement>().map(|i| i.checked()).unwrap_or(false);
            self.page = 0;
            self.render_table(cx);
            if let Ok(Some(b)) = cx
                .page
                .el("requests")
                .query_selector("#missed-only")
                .map(|e| e.and_then(|e| e.dyn_into::<HtmlElement>().ok()))
            {
                b.focus().ok();
            }
        } else if let Some(dir) = target.get_attribute("data-page") {
            let shown = self.table.view(|r| !self.missed_only || self.row_missed(r)).len();
            let pages = table::pages(shown, PAGE_ROWS);
            self.page = if dir == "next" { (self.page + 1).min(pages - 1) } else { self.page.saturating_sub(1) };
            self.render_table(cx);
        }
    }

    pub fn export_png(&self, canvas_id: &str) {
        let name = self.report["scenario"].as_str().unwrap_or("scenario");
        let seed = self.report["seed"].as_u64().unwrap_or(0);
        exports::png(
            canvas_id,
            &format!("inferscale-{name}-seed{seed}-{}.png", canvas_id.trim_start_matches("chart-")),
        );
    }
}

impl Behaviour for Lab {
    fn wiring(&self) -> &'static Wiring {
        &Wiring {
            run: "run",
            cancel: "cancel",
            copy_link: "copy-link",
            results: "results",
            charts: "lab-charts",
            export_bar: ("lab-exports", "Exports"),
            exports: &[
                ("x-json", "json", "JSON"),
                ("x-csv", "csv", "CSV (requests)"),
                ("x-summary", "summary", "CSV (summary)"),
                ("x-md", "md", "Markdown"),
            ],
        }
    }

    fn show(&mut self, _cx: &Cx, _id: PanelId) {}

    fn run(&mut self, cx: &Cx) {
        if self.running || !cx.editor.validate(cx.page) {
            return;
        }
        self.run_id += 1;
        self.running = true;
        self.testing.clear();
        self.started_ms = now_ms();
        self.stage_ms = self.started_ms;
        self.set_buttons(cx);
        self.progress(cx, 0.0);
        cx.page.set_status("Running…");
        // The objectives the run is judged by, for the table's "missed" filter.
        self.ran_slos = inferscale::scenario::parse(&cx.editor.scenario_text(cx.page))
            .map(|sp| {
                let ns = |ms: Option<f64>| ms.map(|m| (m * 1e6).round() as u64);
                sp.workload
                    .classes
                    .iter()
                    .map(|c| (c.name.clone(), ns(c.slo.ttft_ms), ns(c.slo.tpot_ms), ns(c.slo.e2e_ms)))
                    .collect()
            })
            .unwrap_or_default();
        // The URL replays this run.
        let _ = window().location().set_hash(&share_hash(&cx.editor.text(cx.page)));
        // `?crash-test` in the URL makes Run crash the worker instead: the e2e test of recovery.
        let crash = window().location().search().unwrap_or_default().contains("crash-test");
        let msg = if crash {
            Input::Crash { run_id: self.run_id }
        } else {
            Input::Run { run_id: self.run_id, scenario_json: cx.editor.scenario_text(cx.page) }
        };
        if self.pool.is_none() {
            self.spawn_worker(cx);
        }
        if let Some(p) = &self.pool {
            p.send(0, msg);
        }
    }

    fn cancel(&mut self, cx: &Cx) {
        if !self.running {
            return;
        }
        // Dropping the pool terminates the worker at once, mid-run; a fresh one takes the next run.
        self.pool = None;
        self.spawn_worker(cx);
        self.running = false;
        self.set_buttons(cx);
        self.progress(cx, 0.0);
        cx.page.set_status("Cancelled (the last results stay on screen)");
    }

    fn on_output(&mut self, cx: &Cx, _worker: usize, out: Output) {
        match out {
            Output::Progress { run_id, done, expected } if run_id == self.run_id && self.running => {
                let f = if expected > 0 { (done as f64 / expected as f64).min(1.0) } else { 0.0 };
                self.progress(cx, f);
                let elapsed = (now_ms() - self.stage_ms) / 1000.0;
                let left =
                    if f > 0.02 { format!(", about {:.0} s left", elapsed * (1.0 - f) / f) } else { String::new() };
                let what = if self.testing.is_empty() { "Running".to_string() } else { stage_words(&self.testing) };
                cx.page.set_status(&format!("{what}: {done} of {expected} requests done ({:.0} %){left}", f * 100.0));
            }
            Output::Testing { run_id, change } if run_id == self.run_id && self.running => {
                self.stage_ms = now_ms();
                self.progress(cx, 0.0);
                cx.page.set_status(&format!("{}…", stage_words(&change)));
                self.testing = change;
            }
            Output::Done { run_id, results } if run_id == self.run_id => {
                self.running = false;
                self.set_buttons(cx);
                self.progress(cx, 1.0);
                let secs = (now_ms() - self.started_ms) / 1000.0;
                cx.page.el("status").set_attribute("data-run-ms", &format!("{:.1}", secs * 1000.0)).ok();
                cx.page.el("status").set_attribute("data-compute-ms", &format!("{:.1}", results.compute_ms)).ok();
                cx.page.el("status").set_attribute("data-simulate-ms", &format!("{:.1}", results.simulate_ms)).ok();
                cx.page.set_status(&format!("Done in {secs:.2} s"));
                self.show_results(cx, results);
                // Take the user to what the run says.
                cx.page.el("results").scroll_into_view();
                if let Ok(h) = cx.page.el("diagnosis-title").dyn_into::<HtmlElement>() {
                    h.focus().ok();
                }
                // Run → results on screen (cards, charts, table drawn), for the e2e benchmark.
                cx.page.el("status").set_attribute("data-shown-ms", &format!("{:.1}", now_ms() - self.started_ms)).ok();
            }
            Output::Failed { run_id, message } if run_id == self.run_id => {
                // The worker is dead: replace it; the inputs and the last results stay on screen.
                self.running = false;
                self.pool = None;
                self.spawn_worker(cx);
                self.set_buttons(cx);
                self.progress(cx, 0.0);
                cx.editor.show_errors(
                    cx.page,
                    &[("(simulator)".into(), format!("internal error, the worker was restarted: {message}"))],
                );
                cx.page.set_status("The simulator failed; it was restarted");
            }
            Output::Invalid { run_id, errors } if run_id == self.run_id => {
                self.running = false;
                self.set_buttons(cx);
                cx.editor.show_errors(cx.page, &errors);
                cx.page.set_status("The scenario was refused");
            }
            _ => {} // a message from a cancelled run
        }
    }

    fn export(&self, _cx: &Cx, what: &str) {
        let Some(r) = &self.results else { return };
        let name = self.report["scenario"].as_str().unwrap_or("scenario").to_string();
        let seed = self.report["seed"].as_u64().unwrap_or(0);
        let (text, ext, mime) = match what {
            "json" => (&r.report_json, "json", "application/json"),
            "csv" => (&r.requests_csv, "requests.csv", "text/csv"),
            "summary" => (&r.summary_csv, "summary.csv", "text/csv"),
            _ => (&r.markdown, "md", "text/markdown"),
        };
        exports::download_text(&format!("inferscale-{name}-seed{seed}.{ext}"), text, mime);
    }

    fn copy_link(&self, cx: &Cx) {
        copy_link_to(&share_hash(&cx.editor.text(cx.page)));
        cx.page.set_status("Link copied: it replays this exact run");
    }

    fn click(&mut self, cx: &Cx, target: &Element) {
        match target.get_attribute("data-png") {
            Some(id) => self.export_png(&id),
            None => self.table_click(cx, target),
        }
    }

    fn figures(&self) -> &[Figure] {
        &self.charts
    }
}

/// The diagnosis's changes as run on the same requests: one row each, marked measured; at the length that
/// decides the verdict when the run was too short (`length.decided_at` past the run's own).
fn tested_table(tested: &Value, length: &Value) -> String {
    let Some(rows) = tested.as_array().filter(|a| !a.is_empty()) else { return String::new() };
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    let body: String = rows
        .iter()
        .map(|t| {
            if t["measured"] != true {
                let note = t["note"].as_str().unwrap_or("not run");
                return format!("<tr><td>{}</td><td colspan=\"5\">{}</td></tr>", esc(t["change"].as_str().unwrap_or("")), esc(note));
            }
            let outcome = if t["objectives_met"] == true {
                "<span class=\"good\">objectives met</span>"
            } else if t["overloaded"] == true {
                "<span class=\"bad\">still overloaded</span>"
            } else {
                "<span class=\"bad\">still missed</span>"
            };
            format!(
                "<tr><td>{}</td><td>{outcome}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(t["change"].as_str().unwrap_or("")),
                f(&t["served_rps"]),
                f(&t["slo_attainment"]) * 100.0,
                fmt_s(f(&t["p95_ttft_s"])),
                fmt_s(f(&t["p95_tpot_s"]))
            )
        })
        .collect();
    let at = length["decided_at"].as_u64().filter(|&at| Some(at) > length["requests"].as_u64());
    let caption = match at {
        Some(at) => format!("Tested at {at} requests, the length that decides (the same first requests, measured)"),
        None => "Tested on the same requests (measured, same seed)".to_string(),
    };
    format!(
        "<table class=\"tested\" aria-label=\"Changes tested on the same requests\"><caption>{caption}</caption><thead><tr><th>change</th><th>outcome</th><th>served (req/s)</th><th>within SLO (%)</th><th>p95 TTFT</th><th>p95 TPOT</th></tr></thead><tbody>{body}</tbody></table>"
    )
}

fn fmt_s(s: f64) -> String {
    charts::secs(s)
}

/// The report's series `k` against its window times.
fn series_points(series: &Value, k: &str) -> Vec<(f64, f64)> {
    let floats = |k: &str| -> Vec<f64> {
        series[k].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
    };
    floats("t_s").into_iter().zip(floats(k)).collect()
}

/// One named series of points, unlabelled.
fn one(name: &str, points: Vec<(f64, f64)>) -> figure::Series {
    figure::Series { name: name.to_string(), points, labels: vec![] }
}

/// What a run after the scenario's own is doing, from the words the core gives it: measuring sustained
/// capacity (`capacity::of_run`, "sustained capacity, run k of about n"), running the same scenario longer to
/// decide the verdict (`capacity::length`), or testing a change of the advice.
fn stage_words(change: &str) -> String {
    if change.starts_with(inferscale::capacity::PROGRESS_WORDS) {
        format!("Measuring {change} (the highest rate served stably)")
    } else if change.starts_with(inferscale::capacity::length::PROGRESS_WORDS) {
        format!("Running {change}, to decide the verdict near capacity")
    } else {
        format!("Testing the advice on the same requests: {change}")
    }
}

/// The rejected count, with how many were longer than the engine's `max_model_len` (refused at any load).
fn rejected_card(s: &Value) -> String {
    match s["rejected_too_long"].as_u64() {
        Some(n) if n > 0 => format!("{} ({n} past max_model_len)", s["rejected"]),
        _ => format!("{}", s["rejected"]),
    }
}
