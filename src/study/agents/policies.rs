//! `agent-policies`: six retention and routing policies on one program trace.

use super::*;
use crate::scenario::at;
use crate::spec::Bound;
use crate::spec::TTL_S;
use crate::spec::field::Checked;
use crate::study::option::{Bounded, Text, described};
use crate::study::{ColumnDef, column, table};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentPoliciesParams {
    /// The TTL policy's time to live, s.
    pub ttl_s: f64,
    /// Bounded affinity's slack, ms.
    pub slack_ms: f64,
    /// The host tier of the host-offload policy when the scenario has none.
    pub host_kv: HostKvSpec,
}

described!(AgentPoliciesParams {
    ttl_s: Text {
        label: "TTL",
        unit: "s",
        help: "How long the TTL policy keeps a history in HBM after a turn",
        bound: Some(TTL_S),
    };
    slack_ms: Text {
        label: "Affinity slack",
        unit: "ms",
        help: "Bounded affinity leaves a session's worker when its queue penalty passes the best one's by more than this",
        bound: Some(Bound::Range(0.0, 1e9)),
    };
    host_kv: HOST_KV;
});

impl Default for AgentPoliciesParams {
    fn default() -> Self {
        AgentPoliciesParams { ttl_s: 10.0, slack_ms: 50.0, host_kv: default_host() }
    }
}

pub struct AgentPoliciesStudy {
    base: Spec,
    batch: OneBatch,
}

impl StudyDef for AgentPoliciesStudy {
    const ABOUT: About = About {
        name: "agent-policies",
        title: "Agent policies",
        question: "which KV retention and routing policy serves these agent sessions best?",
        how: "Six ways to treat a session's KV between turns — free it, keep it, keep it for a TTL, move it to host memory, with and without sticky or bounded-affinity routing — on the same sessions: latency, cache hits, locality and the HBM each holds.",
        group: Group::Agents,
        rank: Rank::Least("p95 turn TTFT"),
        repeats_by: None,
    };
    type Options = AgentPoliciesParams;

    fn new(spec: &Spec, p: &AgentPoliciesParams) -> Result<Self, ScenarioError> {
        check_base(spec, Self::at())?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        p.host_kv.check_fields(&at!(Self::at(), p.host_kv), &mut e);
        e.finish()?;
        let lb = Some(RouterSpec::LeastOutstanding);
        let sticky = Some(RouterSpec::Sticky);
        let policies = [
            policy("stateless + load balancing", RetentionSpec::Stateless, lb.clone(), false),
            policy("retain, no affinity", RetentionSpec::Retain, lb, false),
            policy(
                &format!("TTL {} then drop + sticky", crate::metrics::secs(p.ttl_s)),
                RetentionSpec::Ttl { ttl_s: Some(p.ttl_s) },
                sticky.clone(),
                false,
            ),
            policy("retain + sticky", RetentionSpec::Retain, sticky.clone(), false),
            policy("host offload + sticky", RetentionSpec::HostOffload, sticky, true),
            policy(
                &format!("bounded affinity ({} slack)", crate::metrics::secs(p.slack_ms / 1e3)),
                RetentionSpec::Retain,
                Some(RouterSpec::BoundedAffinity { slack_ms: p.slack_ms }),
                false,
            ),
        ];
        let jobs: Vec<Job> =
            policies.iter().map(|x| Job { label: x.label.clone(), spec: variant(spec, x, &p.host_kv, None) }).collect();
        check_jobs(&jobs)?;
        Ok(AgentPoliciesStudy { base: spec.clone(), batch: OneBatch::new(jobs) })
    }
}

/// The comparison's table: a row per policy.
const COLUMNS: [ColumnDef<RunSummary>; 11] = [
    column("Policy", "", Format::Text, |x| x.label.as_str().into()),
    column("p95 turn TTFT", "s", Format::Seconds, |x| sess(x).turn_ttft_p95_s.into()),
    column("p95 session E2E", "s", Format::Seconds, |x| sess(x).session_e2e_p95_s.into()),
    column("Cache hit", "of later turns", Format::Percent, |x| cache_hit(sess(x)).into()),
    column("Route locality", "", Format::Percent, |x| sess(x).route_locality.into()),
    column("Recomputed history", "tokens", Format::Int, |x| sess(x).recomputed_history_tokens.into()),
    column("Mean KV", "GB, HBM", Format::Num, |x| sess(x).hbm_mean_gb.into()),
    column("Peak KV", "GB, HBM", Format::Num, |x| sess(x).hbm_peak_gb.into()),
    column("HBM held", "GB·s", Format::Num, |x| sess(x).hbm_gb_s.into()),
    column("Evictions", "TTL + pressure", Format::Int, |x| (sess(x).ttl_evictions + sess(x).pressure_evictions).into()),
    column("Diagnosis", "", Format::Text, |x| session_brief(x).into()),
];

impl OneBatchStudy for AgentPoliciesStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(AgentPoliciesStudy::ABOUT, &self.base, Self::ABOUT.question.into());
        (rep.columns, rep.rows) = table(&COLUMNS, r);
        rep.best_row = fastest(r);
        if let (Some(b), Some(base)) = (rep.best_row, r.first()) {
            let (x, s0) = (sess(&r[b]), sess(base));
            rep.answer = format!(
                "{} has the lowest p95 turn TTFT, {} against {} stateless, with {:.1} % of later turns hitting their cache and {:.2} GB of HBM held on average ({:.0} GB·s).",
                r[b].label,
                crate::metrics::secs(x.turn_ttft_p95_s),
                crate::metrics::secs(s0.turn_ttft_p95_s),
                cache_hit(x) * 100.0,
                x.hbm_mean_gb,
                x.hbm_gb_s
            );
        }
        rep.charts = vec![
            bars("p95 turn TTFT by policy", "p95 turn TTFT (s)", r, |s| s.turn_ttft_p95_s),
            bars("Mean HBM held by retention", "mean retained KV (GB)", r, |s| s.hbm_mean_gb),
        ];
        rep.notes = vec![
            program_note(&self.base),
            "Cache hit: later turns that found their history in HBM or restored it from host memory. Route locality: later turns served by their previous turn's worker. Mean / Peak KV and GB·s: idle session history in HBM (what retention holds between turns), all workers.".into(),
            "Load balancing is least outstanding; with one replica every router is the same.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}

// ---------------------------------------------------------------------------------------------------------
// ttl-sweep
