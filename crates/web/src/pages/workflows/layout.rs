//! The workflow graph's layout, computed on the server with no I/O: steps top to bottom from
//! the TRIGGER, the branches of a CONDITION (yes, no) and of a WAIT_FOR_EVENT (event,
//! timeout) side by side, a "+" at every open end, and the steps no path reaches below the
//! rest. The page draws the result as SVG (`components/workflow_graph.html`).
//!
//! How: a depth-first walk from the TRIGGER in branch order makes a spanning tree (a step
//! reached again through another transition, which only the API can make, is joined by a
//! link to where it already is). Each step's row is its longest path from the TRIGGER, so a
//! link always points down; each subtree takes as many columns as its leaves and open ends,
//! and a step sits over its first branch, the other branches to its right (so the first
//! branch of each step runs straight down and a chain of CONDITIONs stays narrow). Boxes have one fixed size whatever the number
//! of steps: a large graph grows and scrolls, it never shrinks its text.
//!
//! Invariants (unit tested): no two boxes or open ends overlap; everything lies inside
//! `width` × `height`; every step appears exactly once; cycles (the API refuses them) cannot
//! make it loop.

use std::collections::{HashMap, HashSet};

use herald_core::ids::Uuid;
use herald_core::workflow::{Branch, StepType};

pub const NODE_W: i32 = 232;
pub const NODE_H: i32 = 76;
pub const COL_W: i32 = 264;
pub const ROW_H: i32 = 136;
pub const PAD: i32 = 24;
/// The radius of a "+" at an open end.
pub const END_R: i32 = 14;

/// A step as the layout sees it.
#[derive(Clone, Copy, Debug)]
pub struct StepIn {
    pub id: Uuid,
    pub step_type: StepType,
}

/// A transition as the layout sees it.
#[derive(Clone, Copy, Debug)]
pub struct EdgeIn {
    pub from: Uuid,
    pub to: Uuid,
    pub branch: Option<Branch>,
}

/// A step's box: its top-left corner.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeBox {
    pub id: Uuid,
    pub x: i32,
    pub y: i32,
    /// No path from the TRIGGER reaches it (it never runs).
    pub orphan: bool,
}

/// A transition drawn: an SVG path, where its branch label goes, and where its "+" (insert a
/// step here) goes.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub from: Uuid,
    pub to: Uuid,
    pub branch: Option<Branch>,
    pub path: String,
    pub label: (i32, i32),
    pub insert: (i32, i32),
}

/// An open end: a branch of a step with no transition yet, where a "+" adds one.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenEnd {
    pub from: Uuid,
    pub branch: Option<Branch>,
    /// The centre of the "+".
    pub x: i32,
    pub y: i32,
    pub path: String,
    pub label: (i32, i32),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    pub width: i32,
    pub height: i32,
    pub nodes: Vec<NodeBox>,
    pub links: Vec<Link>,
    pub ends: Vec<OpenEnd>,
    /// The top of the "not connected" area (steps no path reaches), if any.
    pub orphans_top: Option<i32>,
}

/// One slot under a step: a tree child, a link to a step placed elsewhere, or an open end.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Child(Uuid, Option<Branch>),
    Join(Uuid, Option<Branch>),
    Open(Option<Branch>),
}

struct Graph<'a> {
    types: HashMap<Uuid, StepType>,
    out: HashMap<Uuid, Vec<&'a EdgeIn>>,
}

impl Graph<'_> {
    /// The outgoing transitions of `id` in branch order (yes before no, the event before the
    /// timeout), then any other, and the open branches.
    fn slots(&self, id: Uuid) -> Vec<(Option<&EdgeIn>, Option<Branch>)> {
        let out = self.out.get(&id).map(Vec::as_slice).unwrap_or(&[]);
        let kind = self.types.get(&id).copied().unwrap_or(StepType::Exit);
        let mut slots = Vec::new();
        let mut used = HashSet::new();
        for b in kind.branches() {
            match out.iter().position(|e| e.branch == *b) {
                Some(i) => {
                    used.insert(i);
                    slots.push((Some(out[i]), *b));
                }
                None => slots.push((None, *b)),
            }
        }
        for (i, e) in out.iter().enumerate() {
            if !used.contains(&i) {
                slots.push((Some(*e), e.branch));
            }
        }
        slots
    }
}

/// Lays out `steps` and `edges` (transitions naming unknown steps are ignored).
pub fn layout(steps: &[StepIn], edges: &[EdgeIn]) -> Layout {
    let types: HashMap<Uuid, StepType> = steps.iter().map(|s| (s.id, s.step_type)).collect();
    let mut out: HashMap<Uuid, Vec<&EdgeIn>> = HashMap::new();
    for e in edges {
        if types.contains_key(&e.from) && types.contains_key(&e.to) && e.from != e.to {
            out.entry(e.from).or_default().push(e);
        }
    }
    let g = Graph { types, out };
    let mut placer = Placer {
        g: &g,
        tree: HashMap::new(),
        seen: HashSet::new(),
        rank: HashMap::new(),
    };
    let trigger = steps.iter().find(|s| s.step_type == StepType::Trigger);
    let mut roots: Vec<(Uuid, bool)> = Vec::new();
    if let Some(t) = trigger {
        placer.claim(t.id);
        roots.push((t.id, false));
    }
    let reached: HashSet<Uuid> = placer.seen.clone();
    // Steps no path reaches: those with no transition from another unreached step first.
    let unreached: Vec<Uuid> = steps
        .iter()
        .map(|s| s.id)
        .filter(|id| !reached.contains(id))
        .collect();
    let has_unreached_parent: HashSet<Uuid> = edges
        .iter()
        .filter(|e| unreached.contains(&e.from) && e.from != e.to)
        .map(|e| e.to)
        .collect();
    let orphan_roots = unreached
        .iter()
        .filter(|id| !has_unreached_parent.contains(id))
        .chain(unreached.iter());
    for id in orphan_roots {
        if !placer.seen.contains(id) {
            placer.claim(*id);
            roots.push((*id, true));
        }
    }
    // Rows: the longest path from the TRIGGER; the steps no path reaches start one empty
    // row below the graph (where the main graph's last open ends are).
    let mut lay = Layout::default();
    let mut main_rows = 0;
    for (root, _) in roots.iter().filter(|(_, orphan)| !orphan) {
        placer.rank_from(*root, 0);
        main_rows = placer.rank.values().copied().max().unwrap_or(0) + 1;
    }
    let orphan_base = roots
        .iter()
        .any(|(_, orphan)| *orphan)
        .then_some(if trigger.is_some() { main_rows + 1 } else { 0 });
    for (root, _) in roots.iter().filter(|(_, orphan)| *orphan) {
        placer.rank_from(*root, orphan_base.unwrap_or(0));
    }
    let mut packer = Packer::default();
    for (root, orphan) in &roots {
        placer.place(*root, *orphan, &mut packer, &mut lay);
    }
    let max_rank = placer.rank.values().copied().max().unwrap_or(0) as i32;
    let cols = lay
        .nodes
        .iter()
        .map(|n| n.x + NODE_W)
        .chain(lay.ends.iter().map(|e| e.x + END_R))
        .max()
        .unwrap_or(NODE_W + PAD);
    let end_rows = lay
        .ends
        .iter()
        .map(|e| e.y + END_R)
        .max()
        .unwrap_or(0)
        .max(PAD + max_rank * ROW_H + NODE_H);
    lay.width = cols.max(NODE_W + PAD) + PAD;
    lay.height = end_rows + PAD;
    lay.orphans_top = orphan_base
        .filter(|b| *b > 0)
        .map(|b| PAD + b as i32 * ROW_H - 28);
    lay
}

struct Placer<'a, 'b> {
    g: &'a Graph<'b>,
    /// Tree slots under each step, once claimed.
    tree: HashMap<Uuid, Vec<Slot>>,
    seen: HashSet<Uuid>,
    rank: HashMap<Uuid, usize>,
}

impl Placer<'_, '_> {
    /// Makes `root` and what it reaches (not yet claimed) a tree, depth first in branch order.
    fn claim(&mut self, root: Uuid) {
        let mut stack = vec![root];
        self.seen.insert(root);
        while let Some(id) = stack.pop() {
            let mut slots = Vec::new();
            let mut children = Vec::new();
            for (edge, branch) in self.g.slots(id) {
                match edge {
                    None => slots.push(Slot::Open(branch)),
                    Some(e) if self.seen.insert(e.to) => {
                        slots.push(Slot::Child(e.to, branch));
                        children.push(e.to);
                    }
                    Some(e) => slots.push(Slot::Join(e.to, branch)),
                }
            }
            self.tree.insert(id, slots);
            // Depth first in branch order: the first branch's subtree claims first.
            stack.extend(children.into_iter().rev());
        }
    }

    /// Rows: each step at least one below every step leading to it in the same tree
    /// (longest path), computed in topological order so that it ends on any input.
    fn rank_from(&mut self, root: Uuid, base: usize) {
        let mut members = Vec::new();
        let mut stack = vec![root];
        let mut inside = HashSet::new();
        while let Some(id) = stack.pop() {
            if !inside.insert(id) {
                continue;
            }
            members.push(id);
            for s in self.tree.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
                if let Slot::Child(c, _) = s {
                    stack.push(*c);
                }
            }
        }
        let mut indegree: HashMap<Uuid, usize> = members.iter().map(|m| (*m, 0)).collect();
        let targets = |slots: &[Slot]| -> Vec<Uuid> {
            slots
                .iter()
                .filter_map(|s| match s {
                    Slot::Child(c, _) | Slot::Join(c, _) => Some(*c),
                    Slot::Open(_) => None,
                })
                .collect()
        };
        for m in &members {
            for t in targets(self.tree.get(m).map(Vec::as_slice).unwrap_or(&[])) {
                if let Some(d) = indegree.get_mut(&t) {
                    *d += 1;
                }
            }
        }
        for m in &members {
            self.rank.insert(*m, base);
        }
        let mut ready: Vec<Uuid> = vec![root];
        let mut done = HashSet::new();
        while let Some(id) = ready.pop() {
            if !done.insert(id) {
                continue;
            }
            let r = self.rank.get(&id).copied().unwrap_or(base);
            for t in targets(self.tree.get(&id).map(Vec::as_slice).unwrap_or(&[])) {
                let Some(d) = indegree.get_mut(&t) else {
                    continue;
                };
                let entry = self.rank.entry(t).or_insert(base);
                *entry = (*entry).max(r + 1);
                *d = d.saturating_sub(1);
                if *d == 0 {
                    ready.push(t);
                }
            }
        }
    }

    /// The deepest row under `id` (its open ends count, one row below their step).
    fn bottom(&self, id: Uuid, memo: &mut HashMap<Uuid, usize>) -> usize {
        if let Some(b) = memo.get(&id) {
            return *b;
        }
        let own = self.rank.get(&id).copied().unwrap_or(0);
        let mut deepest = own;
        for s in self.tree.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
            deepest = deepest.max(match s {
                Slot::Child(c, _) => self.bottom(*c, memo),
                Slot::Open(_) => own + 1,
                Slot::Join(..) => own,
            });
        }
        memo.insert(id, deepest);
        deepest
    }

    /// Places the tree under `root`: each step in the leftmost column free in every row from
    /// its own to the deepest of its subtree (and right of its earlier siblings), its first
    /// branch in its own column. Boxes in different rows share a column, so a chain whose
    /// CONDITIONs end their `no` branch at once stays two columns wide.
    fn place(&self, root: Uuid, orphan: bool, packer: &mut Packer, lay: &mut Layout) {
        let mut w = Walk {
            orphan,
            packer,
            lay,
            memo: HashMap::new(),
            at: HashMap::new(),
            joins: Vec::new(),
        };
        self.place_one(root, 0, &mut w);
        for j in std::mem::take(&mut w.joins) {
            let target = w.at.get(&j.to).copied().or_else(|| {
                w.lay
                    .nodes
                    .iter()
                    .find(|n| n.id == j.to)
                    .map(|n| (n.x + NODE_W / 2, n.y))
            });
            if let Some(end) = target {
                w.lay.links.push(link(j.from, j.to, j.branch, j.start, end));
            }
        }
    }

    /// Places `id` at column `min_col` or the first one right of it that is free; its column.
    fn place_one(&self, id: Uuid, min_col: i32, w: &mut Walk<'_>) -> i32 {
        let row = self.rank.get(&id).copied().unwrap_or(0);
        let deepest = self.bottom(id, &mut w.memo);
        let col = w.packer.free(row, deepest, min_col);
        w.packer.take(row, col);
        let cx = PAD + col * COL_W + NODE_W / 2;
        let top = PAD + row as i32 * ROW_H;
        w.at.insert(id, (cx, top));
        w.lay.nodes.push(NodeBox {
            id,
            x: cx - NODE_W / 2,
            y: top,
            orphan: w.orphan,
        });
        let bottom = top + NODE_H;
        let mut next = col;
        for s in self.tree.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
            match *s {
                Slot::Child(c, branch) => {
                    // From the row under this step: the link's leg runs down that column.
                    let crow = self.rank.get(&c).copied().unwrap_or(row + 1);
                    let need = w.packer.free(row + 1, crow.saturating_sub(1), next);
                    let ccol = self.place_one(c, need, w);
                    let ctop = PAD + crow as i32 * ROW_H;
                    let ccx = PAD + ccol * COL_W + NODE_W / 2;
                    w.lay
                        .links
                        .push(link(id, c, branch, (cx, bottom), (ccx, ctop)));
                    next = ccol + 1;
                }
                Slot::Open(branch) => {
                    let ecol = w.packer.free(row + 1, row + 1, next);
                    w.packer.take(row + 1, ecol);
                    let ex = PAD + ecol * COL_W + NODE_W / 2;
                    let ey = bottom + (ROW_H - NODE_H) + END_R;
                    w.lay.ends.push(OpenEnd {
                        from: id,
                        branch,
                        x: ex,
                        y: ey,
                        path: elbow((cx, bottom), (ex, ey - END_R)),
                        label: (ex + 8, bottom + 38),
                    });
                    next = ecol + 1;
                }
                Slot::Join(to, branch) => w.joins.push(Join {
                    from: id,
                    to,
                    branch,
                    start: (cx, bottom),
                }),
            }
        }
        col
    }
}

/// A transition to a step placed elsewhere, drawn once every step of the tree is placed.
struct Join {
    from: Uuid,
    to: Uuid,
    branch: Option<Branch>,
    start: (i32, i32),
}

/// What placing one tree writes to.
struct Walk<'a> {
    orphan: bool,
    packer: &'a mut Packer,
    lay: &'a mut Layout,
    /// The deepest row under each step ([`Placer::bottom`]).
    memo: HashMap<Uuid, usize>,
    /// Each placed step's top centre.
    at: HashMap<Uuid, (i32, i32)>,
    joins: Vec<Join>,
}

/// The columns taken in each row, for [`Placer::place_one`].
#[derive(Default)]
struct Packer {
    taken: HashMap<usize, HashSet<i32>>,
}

impl Packer {
    /// The first column from `min` free in every row from `top` to `bottom`.
    fn free(&self, top: usize, bottom: usize, min: i32) -> i32 {
        let mut col = min.max(0);
        while (top..=bottom.max(top)).any(|r| self.taken.get(&r).is_some_and(|t| t.contains(&col)))
        {
            col += 1;
        }
        col
    }

    fn take(&mut self, row: usize, col: i32) {
        self.taken.entry(row).or_default().insert(col);
    }
}

fn elbow((x1, y1): (i32, i32), (x2, y2): (i32, i32)) -> String {
    if x1 == x2 {
        format!("M{x1} {y1}V{y2}")
    } else {
        let mid = y1 + 20;
        format!("M{x1} {y1}V{mid}H{x2}V{y2}")
    }
}

fn link(from: Uuid, to: Uuid, branch: Option<Branch>, start: (i32, i32), end: (i32, i32)) -> Link {
    Link {
        from,
        to,
        branch,
        path: elbow(start, end),
        // Beside the transition's "+", right of the circle.
        label: (end.0 + 16, start.1 + 42),
        insert: (end.0, end.1 - 22),
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
