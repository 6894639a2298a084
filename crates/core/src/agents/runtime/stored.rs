//! A runtime's state as a durable store keeps it: one JSON document (its layout, the tree's
//! name, every handle, the trace, the Requests answered), written from the table, read back into
//! one, and merged with what another process wrote meanwhile.
//!
//! Layout 3 names a handle's parent, children and queued wakes by handle id, and a handle whose
//! turn runs carries the lease of the process running it (`{ by, until }`), so every process
//! reads the same document the same way whatever order its own table is in, and a process that
//! opens the store tells a turn running elsewhere from one whose process ended. Layouts 1 and 2
//! (by table index, no leases) are read, never written.
//!
//! Merging is per handle, three ways (what this process last read or wrote, what it has now,
//! what the store has now): a handle only one side changed is that side's; one both changed is
//! merged field by field: the counters add up both sides' changes, the lists (inbox, drained
//! items, children, queued wakes) take both sides' additions and removals, and any other field
//! both changed to different values is the store's (the first writer's). A resume's claim is
//! such a field: of two processes taking one parking up, the one whose write landed first keeps
//! its claim, the other finds the store's.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, PoisonError};

use serde_json::{Map, Value};

use super::core::Inner;
use super::tree::{Node, Tree};
use super::types::{num, AgentDef, HandleId, HandleState, InboxItem, TaskResult, TaskStatus, ROOT};

/// The layout this code writes. 3: handles refer to each other by id, running ones carry a
/// lease; 2 (read): by table index, a suspended handle's conversation ends with its parked turn
/// and `halt` says where it parked; 1 (read): the conversation was rewound to before the turn,
/// replayed from `checkpoint`.
pub(super) const LAYOUT: i64 = 3;

/// The number fields a merge adds both sides' changes of.
const COUNTERS: [&str; 7] =
    ["poolTokens", "poolToolCalls", "poolChildren", "usageTotal", "toolCallsTotal", "turnsTotal", "runningChildren"];
/// The number fields a merge takes the larger of (they only grow).
const GROWING: [&str; 3] = ["seq", "aborts", "ticks"];
/// The list fields a merge takes both sides' additions and removals of.
const LISTS: [&str; 4] = ["inbox", "drained", "children", "wakeQueue"];
/// The fields that say where a handle is in its life (a parking, a claim, the turn taken up):
/// merged as one. A handle can go round (parked, taken up, run, parked again) between two
/// reads, so one field alike on both sides says nothing: when both sides moved it on, the
/// store's (the first writer's) whole account stands.
const LIFE: [&str; 8] = ["state", "pending", "halt", "checkpoint", "claim", "tookUp", "lastResult", "lease"];

/// A number, infinite ones included (JSON has none: they are written as text).
fn f(n: f64) -> Value {
    if n.is_finite() {
        num(n)
    } else {
        Value::String(crate::agents::runtime::types::js_num(n))
    }
}

fn read_f(v: Option<&Value>) -> std::result::Result<f64, String> {
    match v {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| "a number is out of range".to_string()),
        Some(Value::String(s)) => match s.as_str() {
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            "NaN" => Ok(f64::NAN),
            other => Err(format!("{other:?} is not a number")),
        },
        _ => Err("a number is missing".into()),
    }
}

fn read_item(v: &Value) -> std::result::Result<InboxItem, String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string).ok_or(format!("an inbox item has no {k}"));
    Ok(InboxItem { from: s("from")?, channel: s("channel")?, text: s("text")? })
}

fn read_items(v: Option<&Value>) -> std::result::Result<Vec<InboxItem>, String> {
    v.and_then(Value::as_array).map(|a| a.iter().map(read_item).collect()).unwrap_or(Ok(Vec::new()))
}

fn state_of(s: &str) -> Option<HandleState> {
    [HandleState::Idle, HandleState::Running, HandleState::Suspended, HandleState::Closed]
        .into_iter()
        .find(|x| x.as_str() == s)
}

fn status_of(s: &str) -> Option<TaskStatus> {
    [
        TaskStatus::Done,
        TaskStatus::Pending,
        TaskStatus::Incomplete,
        TaskStatus::Interrupted,
        TaskStatus::Closed,
        TaskStatus::Timeout,
        TaskStatus::Error,
    ]
    .into_iter()
    .find(|x| x.as_str() == s)
}

fn read_result(v: &Value) -> std::result::Result<TaskResult, String> {
    Ok(TaskResult {
        text: v.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
        is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        status: v.get("status").and_then(Value::as_str).and_then(status_of).ok_or("a result has no status")?,
        pending: v.get("pending").cloned(),
        turns: read_f(v.get("turns"))?,
        total_tokens: read_f(v.get("totalTokens"))?,
        output: v.get("output").filter(|o| !o.is_null()).cloned(),
    })
}

fn opt_str(s: &Option<String>) -> Value {
    s.clone().map(Value::String).unwrap_or(Value::Null)
}

/// Who holds a lease, and until when.
pub(super) struct Holder<'a> {
    /// This process's runtime, as its leases name it.
    pub by: &'a str,
    /// When a lease written now runs out (ms since the epoch).
    pub until: i64,
}

/// The runtime's whole state as one document (layout 3). Handles whose turns run here carry
/// `holder`'s lease; those running elsewhere keep the lease they were read with.
pub(super) fn document(inner: &Inner, tree_name: Option<&str>, holder: &Holder<'_>) -> Value {
    let nodes: Vec<Value> = {
        let t = inner.tree();
        let ids: Vec<&str> = t.nodes.iter().map(|n| n.id.as_str()).collect();
        t.nodes.iter().map(|n| node_doc(n, &ids, holder)).collect()
    };
    let trace = inner.trace.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut m = Map::new();
    m.insert("layout".into(), LAYOUT.into());
    if let Some(tree) = tree_name {
        m.insert("tree".into(), tree.into());
    }
    m.insert("handles".into(), Value::Array(nodes));
    m.insert("trace".into(), trace.into());
    let answered: Vec<Value> =
        inner.answered.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().map(Value::String).collect();
    m.insert("answered".into(), Value::Array(answered));
    Value::Object(m)
}

fn node_doc(n: &Node, ids: &[&str], holder: &Holder<'_>) -> Value {
    let id_of = |h: HandleId| ids.get(h).map(|s| Value::String((*s).to_string())).unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("id".into(), n.id.clone().into());
    m.insert("def".into(), n.def.name.clone().into());
    m.insert("parent".into(), n.parent.map(id_of).unwrap_or(Value::Null));
    m.insert("depth".into(), n.depth.into());
    m.insert("children".into(), Value::Array(n.children.iter().map(|c| id_of(*c)).collect()));
    m.insert("inbox".into(), Value::Array(n.inbox.iter().map(InboxItem::to_value).collect()));
    m.insert("ticks".into(), n.ticks.into());
    m.insert("state".into(), n.state.as_str().into());
    m.insert("poolTokens".into(), f(n.pool_tokens));
    m.insert("poolToolCalls".into(), f(n.pool_tool_calls));
    m.insert("poolChildren".into(), f(n.pool_children));
    m.insert("maxTurns".into(), f(n.max_turns));
    m.insert("maxConcurrent".into(), f(n.max_concurrent));
    m.insert("maxDepth".into(), f(n.max_depth));
    m.insert("deadline".into(), n.deadline.map(f).unwrap_or(Value::Null));
    m.insert("usageTotal".into(), f(n.usage_total));
    m.insert("toolCallsTotal".into(), f(n.tool_calls_total));
    m.insert("turnsTotal".into(), f(n.turns_total));
    m.insert("pending".into(), n.pending_request.clone().unwrap_or(Value::Null));
    m.insert("lastResult".into(), n.last_result.as_ref().map(TaskResult::to_value).unwrap_or(Value::Null));
    m.insert("aborts".into(), n.aborts.into());
    m.insert("checkpoint".into(), opt_str(&n.checkpoint));
    m.insert("halt".into(), n.halt.map(|h| Value::String(h.as_str().into())).unwrap_or(Value::Null));
    m.insert("drained".into(), Value::Array(n.drained.iter().map(InboxItem::to_value).collect()));
    let queue: Vec<Value> = n.wake_queue.iter().map(|(h, p)| Value::Array(vec![id_of(*h), opt_str(p)])).collect();
    m.insert("wakeQueue".into(), Value::Array(queue));
    m.insert("taskKey".into(), opt_str(&n.task_key));
    m.insert("runningChildren".into(), f(n.running_children));
    m.insert("seq".into(), n.seq.into());
    m.insert("claim".into(), opt_str(&n.claim));
    m.insert("tookUp".into(), n.took_up.clone().unwrap_or(Value::Null));
    let lease = match (n.state, n.remote) {
        (HandleState::Running, false) => {
            let mut l = Map::new();
            l.insert("by".into(), holder.by.into());
            l.insert("until".into(), holder.until.into());
            Value::Object(l)
        }
        (HandleState::Running, true) => n.lease.clone().unwrap_or(Value::Null),
        _ => Value::Null,
    };
    m.insert("lease".into(), lease);
    Value::Object(m)
}

/// A handle as written (its references resolved through `index`), its definition found in the
/// registry; the definition's name when it is not there.
fn read_node(
    v: &Value,
    inner: &Inner,
    root: &Arc<AgentDef>,
    layout: i64,
    index: &dyn Fn(&Value) -> Option<HandleId>,
) -> std::result::Result<(Node, Option<String>), String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let id = s("id").ok_or("a handle has no id")?;
    let def_name = s("def").ok_or_else(|| format!("{id} has no definition"))?;
    let parent = match v.get("parent") {
        None | Some(Value::Null) => None,
        Some(p) => Some(index(p).ok_or_else(|| format!("{id} names a parent that is not there"))?),
    };
    let (def, missing) = if parent.is_none() {
        (root.clone(), None)
    } else {
        match inner.registry.get(&def_name) {
            Some(d) => (d.clone(), None),
            None => (Arc::new(AgentDef { name: def_name.clone(), ..Default::default() }), Some(def_name)),
        }
    };
    let mut n = Node::restored(id.clone(), def, parent);
    n.depth = v.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32;
    n.children = v
        .get("children")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|c| index(c).ok_or_else(|| format!("{id} names a child that is not there"))).collect())
        .unwrap_or(Ok(Vec::new()))?;
    n.inbox = read_items(v.get("inbox"))?;
    n.ticks = v.get("ticks").and_then(Value::as_u64).unwrap_or(0) as u32;
    n.state = s("state").as_deref().and_then(state_of).ok_or_else(|| format!("{id} has no state"))?;
    n.pool_tokens = read_f(v.get("poolTokens"))?;
    n.pool_tool_calls = read_f(v.get("poolToolCalls"))?;
    n.pool_children = read_f(v.get("poolChildren"))?;
    n.max_turns = read_f(v.get("maxTurns"))?;
    n.max_concurrent = read_f(v.get("maxConcurrent"))?;
    n.max_depth = read_f(v.get("maxDepth"))?;
    n.deadline = match v.get("deadline") {
        None | Some(Value::Null) => None,
        d => Some(read_f(d)?),
    };
    n.usage_total = read_f(v.get("usageTotal"))?;
    n.tool_calls_total = read_f(v.get("toolCallsTotal"))?;
    n.turns_total = read_f(v.get("turnsTotal"))?;
    n.pending_request = v.get("pending").filter(|p| !p.is_null()).cloned();
    n.last_result = match v.get("lastResult") {
        None | Some(Value::Null) => None,
        Some(r) => Some(read_result(r)?),
    };
    n.aborts = v.get("aborts").and_then(Value::as_u64).unwrap_or(0);
    n.checkpoint = s("checkpoint");
    n.halt = match (layout, s("halt")) {
        // Layout 1 parked by rewinding the turn: it is replayed from its checkpoint.
        (1, _) | (_, None) => None,
        (_, Some(h)) => {
            Some(crate::client::HaltSite::parse(&h).ok_or_else(|| format!("{id} parked at {h:?}, unknown here"))?)
        }
    };
    if layout >= 2 && n.state == HandleState::Suspended && n.halt.is_none() {
        return Err(format!("{id} is suspended and does not say where it parked"));
    }
    n.drained = read_items(v.get("drained"))?;
    n.wake_queue = v
        .get("wakeQueue")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|e| Some((index(e.get(0)?)?, e.get(1).and_then(Value::as_str).map(str::to_string))))
                .collect::<VecDeque<_>>()
        })
        .unwrap_or_default();
    n.task_key = s("taskKey");
    n.running_children = read_f(v.get("runningChildren"))?;
    n.seq = v.get("seq").and_then(Value::as_u64).unwrap_or(0);
    n.claim = s("claim");
    n.took_up = v.get("tookUp").filter(|p| !p.is_null()).cloned();
    n.lease = v.get("lease").filter(|l| !l.is_null()).cloned();
    Ok((n, missing))
}

/// How a document's handles name each other: by table index (layouts 1 and 2) or by id.
fn indexer(layout: i64, handles: &[Value]) -> impl Fn(&Value) -> Option<HandleId> + '_ {
    let by_id: HashMap<&str, HandleId> = if layout >= 3 {
        handles.iter().enumerate().filter_map(|(i, h)| Some((h.get("id")?.as_str()?, i))).collect()
    } else {
        HashMap::new()
    };
    move |v: &Value| match (layout >= 3, v) {
        (true, Value::String(id)) => by_id.get(id.as_str()).copied(),
        (false, Value::Number(n)) => n.as_u64().map(|i| i as HandleId).filter(|i| *i < handles.len()),
        _ => None,
    }
}

/// What a document holds, read back: the tree (the crash rules applied, see the module of
/// `durable`), its trace, and the Requests it answered. `live` tells a running handle's lease
/// from one whose process ended.
pub(super) fn restore(
    inner: &Inner,
    doc: &Value,
    live: &dyn Fn(&Value) -> bool,
) -> std::result::Result<(Tree, Vec<String>, VecDeque<String>), String> {
    let layout = doc.get("layout").and_then(Value::as_i64).ok_or("it has no layout version")?;
    if layout > LAYOUT {
        return Err(format!("its layout is version {layout}, newer than this toolnexus reads ({LAYOUT})"));
    }
    let handles = doc.get("handles").and_then(Value::as_array).ok_or("it has no handles")?;
    let mut trace: Vec<String> = doc
        .get("trace")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|l| l.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let answered: VecDeque<String> = doc
        .get("answered")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let root = inner.tree().nodes[ROOT].def.clone();
    let index = indexer(layout, handles);
    let mut read = Vec::with_capacity(handles.len());
    for h in handles {
        read.push(read_node(h, inner, &root, layout, &index)?);
    }
    if read.first().is_none_or(|(n, _)| n.parent.is_some()) {
        return Err("its first handle is not the root".into());
    }
    let count = read.len();
    // A finished tree (its root closed) is not resumed: the runtime starts a new one.
    if read[ROOT].0.state == HandleState::Closed {
        return Ok((Tree::new(root, inner.clock.now()), Vec::new(), answered));
    }
    // Closed branches are left behind: a handle stays if it or a descendant is not closed, or
    // if it is a finished child of a parked or running handle (whose turn, taken up again,
    // reattaches to it by its task key and reads its result).
    let mut keep = vec![false; count];
    keep[ROOT] = true;
    let reattachable = |i: usize| {
        read[i].0.task_key.is_some()
            && read[i]
                .0
                .parent
                .is_some_and(|p| matches!(read[p].0.state, HandleState::Suspended | HandleState::Running))
    };
    for i in 1..count {
        if read[i].0.state != HandleState::Closed || reattachable(i) {
            let mut a = Some(i);
            while let Some(x) = a.filter(|x| !keep[*x]) {
                keep[x] = true;
                a = read[x].0.parent;
            }
        }
    }
    let mut at: HashMap<HandleId, HandleId> = HashMap::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut missing: Vec<(HandleId, String)> = Vec::new();
    for (i, (node, gone)) in read.into_iter().enumerate() {
        if keep[i] {
            at.insert(i, nodes.len());
            if let Some(name) = gone {
                missing.push((nodes.len(), name));
            }
            nodes.push(node);
        }
    }
    for n in &mut nodes {
        n.parent = n.parent.and_then(|p| at.get(&p).copied());
        n.children = n.children.iter().filter_map(|c| at.get(c).copied()).collect();
        n.wake_queue = n.wake_queue.iter().filter_map(|(h, p)| Some((*at.get(h)?, p.clone()))).collect();
    }
    let mut tree = Tree { nodes, next_waiter: 0 };
    // A turn running under a live lease runs in another process: it stays running there. What
    // was running (or waiting to run) when its process ended is interrupted.
    for n in &mut tree.nodes {
        n.remote = n.state == HandleState::Running && n.lease.as_ref().is_some_and(live);
        if !n.remote {
            n.lease = None;
        }
    }
    let alive = |t: &Tree, h: HandleId| t.nodes[h].children.iter().any(|c| t.nodes[*c].remote);
    let queued: Vec<HandleId> = (0..tree.nodes.len())
        .filter(|p| !alive(&tree, *p))
        .flat_map(|p| tree.nodes[p].wake_queue.iter().map(|(h, _)| *h).collect::<Vec<_>>())
        .collect();
    for p in 0..tree.nodes.len() {
        if !alive(&tree, p) {
            tree.nodes[p].wake_queue.clear();
        }
        let remote = tree.nodes[p].children.iter().filter(|c| tree.nodes[**c].remote).count();
        tree.nodes[p].running_children = remote as f64;
    }
    for h in 0..tree.nodes.len() {
        let was_running = tree.nodes[h].state == HandleState::Running && !tree.nodes[h].remote;
        if !was_running && !queued.contains(&h) {
            continue;
        }
        let n = &mut tree.nodes[h];
        n.state = HandleState::Idle;
        let mut back = std::mem::take(&mut n.drained);
        back.append(&mut n.inbox);
        n.inbox = back;
        let why = if was_running {
            "its turn was running when its process ended"
        } else {
            "its wake was queued when its process ended"
        };
        let r = tree.result(h, format!("interrupted: {why}"), TaskStatus::Interrupted);
        tree.nodes[h].last_result = Some(r);
        trace.push(format!(
            "{}: {}\u{2192}idle (interrupted: {why})",
            tree.nodes[h].id,
            if was_running { "running" } else { "idle" }
        ));
    }
    for (h, name) in missing {
        let n = &mut tree.nodes[h];
        if n.state != HandleState::Closed {
            n.state = HandleState::Closed;
            trace.push(format!("{}: closed (its definition \"{name}\" is not in this runtime's registry)", n.id));
        }
    }
    Ok((tree, trace, answered))
}

/// The handles of a document by id.
fn handles_by_id(doc: &Value) -> HashMap<String, &Value> {
    doc.get("handles")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|h| Some((h.get("id")?.as_str()?.to_string(), h))).collect())
        .unwrap_or_default()
}

/// Three ways, per handle: what this process last read or wrote (`base`, `None` when it never
/// did), what it has now (`ours`), what the store has now (`theirs`). See the module.
pub(super) fn merge(base: Option<&Value>, ours: &Value, theirs: &Value, holder: &str) -> Value {
    let b = base.map(handles_by_id).unwrap_or_default();
    let o = handles_by_id(ours);
    let mut handles: Vec<Value> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let t_list = theirs.get("handles").and_then(Value::as_array).cloned().unwrap_or_default();
    for t in &t_list {
        let Some(id) = t.get("id").and_then(Value::as_str) else { continue };
        seen.insert(id.to_string());
        let merged = match (b.get(id), o.get(id)) {
            (_, None) => t.clone(),
            (Some(bh), Some(oh)) if *bh == *oh => t.clone(),
            (Some(bh), Some(oh)) if **bh == *t => (*oh).clone(),
            (bh, Some(oh)) => merge_handle(bh.copied(), oh, t, holder),
        };
        handles.push(merged);
    }
    // Handles this process added (or the store no longer has but this process changed).
    if let Some(list) = ours.get("handles").and_then(Value::as_array) {
        for oh in list {
            let Some(id) = oh.get("id").and_then(Value::as_str) else { continue };
            if seen.contains(id) {
                continue;
            }
            let dropped_by_them = b.get(id).is_some_and(|bh| **bh == *oh);
            if !dropped_by_them {
                handles.push(oh.clone());
            }
        }
    }
    let mut m = theirs.as_object().cloned().unwrap_or_default();
    m.insert("handles".into(), Value::Array(handles));
    m.insert("trace".into(), merge_appended(base, ours, theirs, "trace", usize::MAX));
    m.insert("answered".into(), merge_appended(base, ours, theirs, "answered", super::core::ANSWERED));
    Value::Object(m)
}

/// A list that only grows at its end (the trace, the Requests answered): the store's, then what
/// this process appended since `base`, the oldest going past `cap`.
fn merge_appended(base: Option<&Value>, ours: &Value, theirs: &Value, key: &str, cap: usize) -> Value {
    let list = |d: Option<&Value>| d.and_then(|d| d.get(key)).and_then(Value::as_array).cloned().unwrap_or_default();
    let (b, o, mut t) = (list(base), list(Some(ours)), list(Some(theirs)));
    let added: Vec<Value> =
        if o.starts_with(&b) { o[b.len()..].to_vec() } else { o.into_iter().filter(|x| !b.contains(x)).collect() };
    for x in added {
        if key != "answered" || !t.contains(&x) {
            t.push(x);
        }
    }
    if t.len() > cap {
        t.drain(..t.len() - cap);
    }
    Value::Array(t)
}

/// One handle both sides changed, field by field (see the module). `holder` names this
/// process in its leases.
fn merge_handle(b: Option<&Value>, o: &Value, t: &Value, holder: &str) -> Value {
    let empty = Map::new();
    let bm = b.and_then(Value::as_object).unwrap_or(&empty);
    let (Some(om), Some(tm)) = (o.as_object(), t.as_object()) else { return t.clone() };
    // (A lease renewed is no move: it goes with whichever account stands.)
    let moved = |m: &Map<String, Value>| LIFE.iter().any(|k| *k != "lease" && m.get(*k) != bm.get(*k));
    // Whose turn the handle is in: each turn has a claim of its own, and only the process
    // running a turn (holding its lease) moves the handle on within it; another process's copy
    // of the same turn is a copy, however late.
    let held =
        |m: &Map<String, Value>| m.get("lease").and_then(|l| l.get("by")).and_then(Value::as_str) == Some(holder);
    let same_turn = om.get("claim").is_some_and(|c| !c.is_null()) && om.get("claim") == tm.get("claim");
    let ours_to_move = same_turn && (held(om) || held(bm));
    // Where the handle is in its life: this process's account when only it moved it on, or
    // when the turn both sides speak of is this process's; else the store's (the first
    // writer's) stands.
    let life_is_ours = moved(om) && (!moved(tm) || ours_to_move);
    let mut out = tm.clone();
    for (k, ov) in om {
        if LIFE.contains(&k.as_str()) {
            if life_is_ours {
                out.insert(k.clone(), ov.clone());
            }
            continue;
        }
        let bv = bm.get(k);
        let tv = tm.get(k);
        if Some(ov) == bv || Some(ov) == tv {
            continue; // unchanged here, or the same change: the store's stands
        }
        if tv == bv {
            out.insert(k.clone(), ov.clone()); // only this process changed it
            continue;
        }
        let merged = if COUNTERS.contains(&k.as_str()) {
            add_changes(bv, ov, tv)
        } else if GROWING.contains(&k.as_str()) {
            match (ov.as_f64(), tv.and_then(Value::as_f64)) {
                (Some(x), Some(y)) if x > y => Some(ov.clone()),
                _ => None,
            }
        } else if LISTS.contains(&k.as_str()) {
            Some(merge_list(bv, ov, tv))
        } else {
            None // both changed it: the store's (the first writer's) stands
        };
        if let Some(v) = merged {
            out.insert(k.clone(), v);
        }
    }
    if life_is_ours {
        // A field of its life this process dropped (none of them is ever left out, but a layout
        // may): the store's copy goes too.
        for k in LIFE {
            if !om.contains_key(k) {
                out.remove(k);
            }
        }
    }
    Value::Object(out)
}

/// `base + (ours - base) + (theirs - base)` for a number both sides changed (infinite pools
/// stay as the store has them).
fn add_changes(b: Option<&Value>, o: &Value, t: Option<&Value>) -> Option<Value> {
    let (b, o, t) = (read_f(b).ok()?, read_f(Some(o)).ok()?, read_f(t).ok()?);
    if !(b.is_finite() && o.is_finite() && t.is_finite()) {
        return None;
    }
    Some(f(b + (o - b) + (t - b)))
}

/// A list both sides changed: the store's, without what this process removed since `base`,
/// with what it added.
fn merge_list(b: Option<&Value>, o: &Value, t: Option<&Value>) -> Value {
    let arr = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    let (b, o, mut out) = (arr(b), arr(Some(o)), arr(t));
    for x in &b {
        let (in_b, in_o) = (b.iter().filter(|y| *y == x).count(), o.iter().filter(|y| *y == x).count());
        for _ in in_o..in_b {
            if let Some(at) = out.iter().position(|y| y == x) {
                out.remove(at);
            }
        }
    }
    let mut left_b = b.clone();
    for x in o {
        match left_b.iter().position(|y| *y == x) {
            Some(at) => {
                left_b.remove(at);
            }
            None => out.push(x),
        }
    }
    Value::Array(out)
}

/// Bring the table in line with `merged` where another process changed it: `ours` is the
/// document this process wrote from (a snapshot; the table may have moved on since, its turns
/// running meanwhile). A field the merge took from the other side is set here unless this
/// process changed it again since the snapshot (then its newer value stays, for the next write
/// to merge); handles the other side added are added; this process's live parts (waiters, the
/// abort of a turn running here) stay. The trace and the Requests answered become the merged
/// ones followed by what was added here since the snapshot. A handle another process finished
/// wakes its waiters here.
pub(super) fn adopt(inner: &Inner, ours: &Value, merged: &Value, by: &str) {
    let o = handles_by_id(ours);
    let Some(list) = merged.get("handles").and_then(Value::as_array) else { return };
    let root = inner.tree().nodes[ROOT].def.clone();
    let theirs: Vec<&Value> = list
        .iter()
        .filter(|h| h.get("id").and_then(Value::as_str).is_some_and(|id| o.get(id).is_none_or(|oh| **oh != **h)))
        .collect();
    if !theirs.is_empty() {
        let mut t = inner.tree();
        // Handles new here first, so every reference finds its handle.
        for h in &theirs {
            let Some(id) = h.get("id").and_then(Value::as_str) else { continue };
            if t.find(id).is_none() {
                let def = h
                    .get("def")
                    .and_then(Value::as_str)
                    .and_then(|d| inner.registry.get(d).cloned())
                    .unwrap_or_else(|| root.clone());
                t.nodes.push(Node::restored(id.to_string(), def, None));
            }
        }
        let names: Vec<String> = t.nodes.iter().map(|n| n.id.clone()).collect();
        let ids: HashMap<&str, HandleId> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        let index = |v: &Value| v.as_str().and_then(|s| ids.get(s).copied());
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let holder = Holder { by, until: 0 };
        for mh in theirs {
            let Some(at) = mh.get("id").and_then(Value::as_str).and_then(|id| ids.get(id).copied()) else { continue };
            let oh = mh.get("id").and_then(Value::as_str).and_then(|id| o.get(id)).copied();
            // The handle as it is here now, with the other side's changes laid over it.
            let now = node_doc(&t.nodes[at], &refs, &holder);
            let mut target = now.as_object().cloned().unwrap_or_default();
            // Where it is in its life: the merge kept the snapshot's account, or took the other
            // side's (both moved it on: the first writer's stands, whatever this process did
            // since the snapshot; a claim made here meanwhile is then lost, and its resume sees
            // so). Taken as one (see `LIFE`).
            let theirs_won = oh.is_none_or(|oh| LIFE.iter().any(|k| *k != "lease" && mh.get(*k) != oh.get(*k)));
            if theirs_won {
                for k in LIFE {
                    match mh.get(k) {
                        Some(v) => target.insert(k.to_string(), v.clone()),
                        None => target.remove(k),
                    };
                }
            } else if t.nodes[at].state != HandleState::Running || t.nodes[at].remote {
                // Another process's turn renews its lease: the newest one read is kept.
                if let Some(l) = mh.get("lease") {
                    target.insert("lease".into(), l.clone());
                }
            }
            if let Some(m) = mh.as_object() {
                for (k, mv) in m {
                    let ov = oh.and_then(|oh| oh.get(k));
                    if ov == Some(mv) || LIFE.contains(&k.as_str()) {
                        continue;
                    }
                    // Changed here since the snapshot: this process's value stays.
                    if oh.is_some() && now.get(k) != ov {
                        continue;
                    }
                    target.insert(k.clone(), mv.clone());
                }
            }
            let Ok((mut fresh, _)) = read_node(&Value::Object(target), inner, &root, LAYOUT, &index) else { continue };
            let local = &mut t.nodes[at];
            // Running under a lease of this process's is its own turn; under another's, remote.
            let held_here = fresh.lease.as_ref().and_then(|l| l.get("by")).and_then(Value::as_str) == Some(by);
            let running_here = local.state == HandleState::Running && !local.remote;
            fresh.remote = fresh.state == HandleState::Running && !held_here && !running_here;
            let finished = local.state == HandleState::Running
                && local.remote
                && matches!(fresh.state, HandleState::Idle | HandleState::Closed);
            copy_stored(local, fresh);
            if finished {
                if let Some(r) = t.nodes[at].last_result.clone() {
                    t.notify(at, &r);
                }
            }
        }
    }
    let strings = |d: &Value, k: &str| -> Vec<String> {
        d.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let since = |d: &Value, k: &str| d.get(k).and_then(Value::as_array).map(Vec::len).unwrap_or(0);
    {
        let mut trace = inner.trace.lock().unwrap_or_else(PoisonError::into_inner);
        let added: Vec<String> = trace.get(since(ours, "trace")..).map(<[String]>::to_vec).unwrap_or_default();
        let mut next = strings(merged, "trace");
        next.extend(added);
        *trace = next;
    }
    let mut answered = inner.answered.lock().unwrap_or_else(PoisonError::into_inner);
    let mut next: VecDeque<String> = strings(merged, "answered").into();
    for a in answered.iter() {
        if !next.contains(a) {
            next.push_back(a.clone());
        }
    }
    while next.len() > super::core::ANSWERED {
        next.pop_front();
    }
    *answered = next;
}

/// Every field a store keeps, from `src` into `dst` (what only this process has stays).
fn copy_stored(dst: &mut Node, src: Node) {
    dst.parent = src.parent;
    dst.depth = src.depth;
    dst.children = src.children;
    dst.inbox = src.inbox;
    dst.ticks = src.ticks;
    dst.state = src.state;
    dst.pool_tokens = src.pool_tokens;
    dst.pool_tool_calls = src.pool_tool_calls;
    dst.pool_children = src.pool_children;
    dst.max_turns = src.max_turns;
    dst.max_concurrent = src.max_concurrent;
    dst.max_depth = src.max_depth;
    dst.deadline = src.deadline;
    dst.usage_total = src.usage_total;
    dst.tool_calls_total = src.tool_calls_total;
    dst.turns_total = src.turns_total;
    dst.pending_request = src.pending_request;
    dst.last_result = src.last_result;
    dst.aborts = src.aborts;
    dst.checkpoint = src.checkpoint;
    dst.halt = src.halt;
    dst.drained = src.drained;
    dst.wake_queue = src.wake_queue;
    dst.task_key = src.task_key;
    dst.running_children = src.running_children;
    dst.seq = src.seq;
    dst.claim = src.claim;
    dst.took_up = src.took_up;
    dst.remote = src.remote;
    dst.lease = if src.remote { src.lease } else { None };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn infinite_numbers_survive_the_round_trip() {
        for n in [f64::INFINITY, f64::NEG_INFINITY, 3.0, 0.5] {
            assert_eq!(read_f(Some(&f(n))).ok(), Some(n));
        }
        assert!(read_f(Some(&f(f64::NAN))).is_ok_and(f64::is_nan));
        assert!(read_f(Some(&Value::String("lots".into()))).is_err());
    }

    fn doc(handles: Vec<Value>, trace: &[&str], answered: &[&str]) -> Value {
        json!({"layout": 3, "tree": "t1", "handles": handles, "trace": trace, "answered": answered})
    }

    fn handle(id: &str, state: &str, extra: Value) -> Value {
        let mut h =
            json!({"id": id, "state": state, "usageTotal": 0, "poolTokens": 100, "inbox": [], "claim": null, "seq": 0});
        if let (Value::Object(m), Value::Object(more)) = (&mut h, extra) {
            m.extend(more);
        }
        h
    }

    #[test]
    fn a_merge_keeps_each_sides_own_handles_and_adds_up_shared_counters() {
        let base = doc(
            vec![
                handle("root", "idle", json!({})),
                handle("a", "suspended", json!({})),
                handle("b", "suspended", json!({})),
            ],
            &["l1"],
            &[],
        );
        // This process took `a` up and spent 10 tokens of the root's pool; the store's writer
        // took `b` up and spent 5.
        let ours = doc(
            vec![
                handle("root", "idle", json!({"poolTokens": 90, "usageTotal": 10})),
                handle("a", "idle", json!({"claim": "ours"})),
                handle("b", "suspended", json!({})),
            ],
            &["l1", "a: resumed"],
            &["ra"],
        );
        let theirs = doc(
            vec![
                handle("root", "idle", json!({"poolTokens": 95, "usageTotal": 5})),
                handle("a", "suspended", json!({})),
                handle("b", "idle", json!({"claim": "theirs"})),
            ],
            &["l1", "b: resumed"],
            &["rb"],
        );
        let m = merge(Some(&base), &ours, &theirs, "me");
        let hs = handles_by_id(&m);
        assert_eq!(hs["root"]["poolTokens"], json!(85));
        assert_eq!(hs["root"]["usageTotal"], json!(15));
        assert_eq!((hs["a"]["state"].clone(), hs["a"]["claim"].clone()), (json!("idle"), json!("ours")));
        assert_eq!((hs["b"]["state"].clone(), hs["b"]["claim"].clone()), (json!("idle"), json!("theirs")));
        assert_eq!(m["trace"], json!(["l1", "b: resumed", "a: resumed"]));
        assert_eq!(m["answered"], json!(["rb", "ra"]));
    }

    #[test]
    fn of_two_claims_on_one_handle_the_stored_one_stands() {
        let base = doc(vec![handle("root", "idle", json!({})), handle("a", "suspended", json!({}))], &[], &[]);
        let ours =
            doc(vec![handle("root", "idle", json!({})), handle("a", "idle", json!({"claim": "mine"}))], &[], &["r"]);
        let theirs = doc(
            vec![handle("root", "idle", json!({})), handle("a", "running", json!({"claim": "first"}))],
            &[],
            &["r"],
        );
        let m = merge(Some(&base), &ours, &theirs, "me");
        assert_eq!(handles_by_id(&m)["a"]["claim"], json!("first"));
        assert_eq!(m["answered"], json!(["r"]), "one entry for one Request");
    }

    #[test]
    fn a_handle_that_went_round_elsewhere_keeps_the_stores_account() {
        // This process took the parking up from `base`; meanwhile another took it up, ran it and
        // parked it again: the state alone reads "suspended" on both the base and the store.
        let base = doc(
            vec![
                handle("root", "idle", json!({})),
                handle("a", "suspended", json!({"claim": "c1", "pending": {"id": "r1"}})),
            ],
            &[],
            &[],
        );
        let ours = doc(
            vec![handle("root", "idle", json!({})), handle("a", "running", json!({"claim": "mine", "pending": null}))],
            &[],
            &[],
        );
        let theirs = doc(
            vec![
                handle("root", "idle", json!({})),
                handle("a", "suspended", json!({"claim": "c2", "pending": {"id": "r2"}})),
            ],
            &[],
            &[],
        );
        let a = &handles_by_id(&merge(Some(&base), &ours, &theirs, "me"))["a"].clone();
        assert_eq!(
            (a["state"].clone(), a["claim"].clone(), a["pending"].clone()),
            (json!("suspended"), json!("c2"), json!({"id": "r2"}))
        );
    }

    #[test]
    fn lists_take_both_sides_additions_and_removals() {
        let item = |t: &str| json!({"from": "x", "channel": "c", "text": t});
        let base = doc(vec![handle("root", "idle", json!({"inbox": [item("1"), item("2")]}))], &[], &[]);
        // This process drained "1"; the store's writer posted "3".
        let ours = doc(vec![handle("root", "running", json!({"inbox": [item("2")]}))], &[], &[]);
        let theirs = doc(vec![handle("root", "idle", json!({"inbox": [item("1"), item("2"), item("3")]}))], &[], &[]);
        let m = merge(Some(&base), &ours, &theirs, "me");
        assert_eq!(handles_by_id(&m)["root"]["inbox"], json!([item("2"), item("3")]));
        assert_eq!(handles_by_id(&m)["root"]["state"], json!("running"), "only this process changed the state");
    }

    #[test]
    fn a_handle_added_on_either_side_is_kept() {
        let base = doc(vec![handle("root", "idle", json!({}))], &[], &[]);
        let ours = doc(vec![handle("root", "idle", json!({})), handle("root/x.1", "idle", json!({}))], &[], &[]);
        let theirs = doc(vec![handle("root", "idle", json!({})), handle("root/y.1", "idle", json!({}))], &[], &[]);
        let m = merge(Some(&base), &ours, &theirs, "me");
        let ids: Vec<&str> = m["handles"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["root", "root/y.1", "root/x.1"]);
    }
}
