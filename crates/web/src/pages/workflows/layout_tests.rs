use super::*;

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn step(n: u128, t: StepType) -> StepIn {
    StepIn {
        id: id(n),
        step_type: t,
    }
}

fn edge(from: u128, to: u128, branch: Option<Branch>) -> EdgeIn {
    EdgeIn {
        from: id(from),
        to: id(to),
        branch,
    }
}

fn node(l: &Layout, n: u128) -> &NodeBox {
    l.nodes.iter().find(|b| b.id == id(n)).expect("placed")
}

/// Boxes and "+" circles never overlap, all lie inside the drawing, each step is drawn once.
fn check_sound(l: &Layout, steps: usize) {
    assert_eq!(l.nodes.len(), steps, "every step once");
    let mut ids: Vec<Uuid> = l.nodes.iter().map(|n| n.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), steps);
    let mut rects: Vec<(i32, i32, i32, i32)> = l
        .nodes
        .iter()
        .map(|n| (n.x, n.y, n.x + NODE_W, n.y + NODE_H))
        .collect();
    rects.extend(
        l.ends
            .iter()
            .map(|e| (e.x - END_R, e.y - END_R, e.x + END_R, e.y + END_R)),
    );
    for (i, a) in rects.iter().enumerate() {
        assert!(
            a.0 >= 0 && a.1 >= 0 && a.2 <= l.width && a.3 <= l.height,
            "{a:?} inside"
        );
        for b in &rects[i + 1..] {
            let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
            assert!(apart, "{a:?} overlaps {b:?}");
        }
    }
}

#[test]
fn a_chain_runs_top_to_bottom_in_one_column_with_a_plus_at_its_end() {
    let steps = [
        step(1, StepType::Trigger),
        step(2, StepType::SendEmail),
        step(3, StepType::Delay),
    ];
    let l = layout(&steps, &[edge(1, 2, None), edge(2, 3, None)]);
    check_sound(&l, 3);
    assert_eq!(node(&l, 1).x, node(&l, 2).x);
    assert_eq!(node(&l, 2).x, node(&l, 3).x);
    assert!(node(&l, 1).y < node(&l, 2).y && node(&l, 2).y < node(&l, 3).y);
    assert_eq!(node(&l, 2).y - node(&l, 1).y, ROW_H);
    assert_eq!(l.ends.len(), 1, "one open end, after the last step");
    assert_eq!(l.ends[0].from, id(3));
    assert!(l.ends[0].y > node(&l, 3).y + NODE_H);
    assert_eq!(l.links.len(), 2);
    assert!(l.links[0].path.starts_with('M'));
}

#[test]
fn condition_branches_sit_side_by_side_yes_on_the_left() {
    let steps = [
        step(1, StepType::Trigger),
        step(2, StepType::Condition),
        step(3, StepType::SendEmail),
        step(4, StepType::Exit),
    ];
    let edges = [
        edge(1, 2, None),
        edge(2, 4, Some(Branch::No)),
        edge(2, 3, Some(Branch::Yes)),
    ];
    let l = layout(&steps, &edges);
    check_sound(&l, 4);
    let (yes, no) = (node(&l, 3), node(&l, 4));
    assert_eq!(yes.y, no.y, "same row");
    assert!(yes.x + NODE_W <= no.x, "yes left of no");
    let cond = node(&l, 2);
    assert_eq!(
        cond.x, yes.x,
        "over its first branch, which runs straight down"
    );
    assert_eq!(no.x - yes.x, COL_W, "the other branch in the next column");
    // EXIT has no open end; the SEND_EMAIL has one.
    assert_eq!(l.ends.len(), 1);
    assert_eq!(l.ends[0].from, id(3));
}

#[test]
fn every_open_branch_gets_a_plus() {
    let steps = [
        step(1, StepType::Trigger),
        step(2, StepType::Condition),
        step(3, StepType::WaitForEvent),
    ];
    let l = layout(&steps, &[edge(1, 2, None), edge(2, 3, Some(Branch::Yes))]);
    check_sound(&l, 3);
    let mut ends: Vec<(Uuid, Option<Branch>)> = l.ends.iter().map(|e| (e.from, e.branch)).collect();
    ends.sort_by_key(|e| (e.0, e.1.map(Branch::as_str)));
    assert_eq!(
        ends,
        vec![
            (id(2), Some(Branch::No)),
            (id(3), None),
            (id(3), Some(Branch::Timeout)),
        ]
    );
    let trigger_only = layout(&[step(1, StepType::Trigger)], &[]);
    assert_eq!(trigger_only.ends.len(), 1);
    check_sound(&trigger_only, 1);
}

#[test]
fn steps_no_path_reaches_go_below_the_graph() {
    let steps = [
        step(1, StepType::Trigger),
        step(2, StepType::Delay),
        step(3, StepType::SendEmail),
        step(4, StepType::Exit),
    ];
    let l = layout(&steps, &[edge(1, 2, None), edge(3, 4, None)]);
    check_sound(&l, 4);
    assert!(!node(&l, 2).orphan);
    assert!(node(&l, 3).orphan && node(&l, 4).orphan);
    let top = l.orphans_top.expect("an orphan area");
    assert!(
        top > node(&l, 2).y + NODE_H + END_R * 2,
        "below the last open end"
    );
    assert!(node(&l, 3).y > top && node(&l, 4).y > node(&l, 3).y);
}

#[test]
fn a_step_reached_twice_is_drawn_once_below_both() {
    // Only the API can make this: both branches of a CONDITION lead to the same step.
    let steps = [
        step(1, StepType::Trigger),
        step(2, StepType::Condition),
        step(3, StepType::Delay),
        step(4, StepType::Exit),
    ];
    let edges = [
        edge(1, 2, None),
        edge(2, 3, Some(Branch::Yes)),
        edge(2, 4, Some(Branch::No)),
        edge(3, 4, None),
    ];
    let l = layout(&steps, &edges);
    check_sound(&l, 4);
    assert!(
        node(&l, 4).y > node(&l, 3).y,
        "longest path decides the row"
    );
    assert_eq!(l.links.len(), 4);
}

#[test]
fn a_cycle_cannot_make_it_loop() {
    let steps = [
        step(1, StepType::Trigger),
        step(2, StepType::Delay),
        step(3, StepType::Delay),
    ];
    let edges = [edge(1, 2, None), edge(2, 3, None), edge(3, 2, None)];
    let l = layout(&steps, &edges);
    assert_eq!(l.nodes.len(), 3);
}

/// 50 steps: a chain with a CONDITION every fifth step (its `no` an EXIT) stays one box per
/// step at the same size, no overlap, two columns wide (the chain, its exits).
#[test]
fn fifty_steps_stay_readable() {
    let mut steps = vec![step(1, StepType::Trigger)];
    let mut edges = Vec::new();
    let mut prev = 1;
    let mut prev_branch = None;
    let mut n = 2;
    while steps.len() < 50 {
        if n % 5 == 0 && steps.len() < 49 {
            steps.push(step(n, StepType::Condition));
            edges.push(edge(prev, n, prev_branch));
            steps.push(step(n + 1, StepType::Exit));
            edges.push(edge(n, n + 1, Some(Branch::No)));
            prev = n;
            prev_branch = Some(Branch::Yes);
            n += 2;
        } else {
            steps.push(step(n, StepType::SendEmail));
            edges.push(edge(prev, n, prev_branch));
            prev = n;
            prev_branch = None;
            n += 1;
        }
    }
    let l = layout(&steps, &edges);
    check_sound(&l, 50);
    let columns: HashSet<i32> = l.nodes.iter().map(|b| b.x).collect();
    assert_eq!(columns.len(), 2, "{columns:?}");
    assert!(l.width <= 2 * COL_W + 2 * PAD);
    assert_eq!(l.links.len(), edges.len());
}

/// A balanced tree of CONDITIONs: every branch side by side, nothing overlaps.
#[test]
fn nested_conditions_never_overlap() {
    let mut steps = vec![step(1, StepType::Trigger), step(2, StepType::Condition)];
    let mut edges = vec![edge(1, 2, None)];
    let mut next = 3;
    let mut frontier = vec![2];
    while steps.len() < 50 {
        let parent = frontier.remove(0);
        for b in [Branch::Yes, Branch::No] {
            if steps.len() >= 50 {
                break;
            }
            steps.push(step(next, StepType::Condition));
            edges.push(edge(parent, next, Some(b)));
            frontier.push(next);
            next += 1;
        }
    }
    let l = layout(&steps, &edges);
    check_sound(&l, 50);
}
