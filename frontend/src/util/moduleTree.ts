// Pure helpers for the Module view: tree flattening (the tree table) and the flame graph layout.
// Both walk the same nodes, so the table and the flame show the same numbers and hierarchy.
import type { ModuleNode } from "../api/types";

/** A stable id for a node: its index path from the roots, e.g. "0/2/1". */
export type NodeId = string;

export interface FlatRow {
  id: NodeId;
  node: ModuleNode;
  depth: number;
  hasChildren: boolean;
  expanded: boolean;
}

/** The visible rows of the tree table, depth-first: children follow their parent only when expanded. */
export function flattenTree(roots: ModuleNode[], expanded: ReadonlySet<NodeId>): FlatRow[] {
  const out: FlatRow[] = [];
  const walk = (nodes: ModuleNode[], depth: number, prefix: string) => {
    nodes.forEach((node, i) => {
      const id = prefix === "" ? String(i) : `${prefix}/${i}`;
      const open = expanded.has(id);
      out.push({ id, node, depth, hasChildren: node.children.length > 0, expanded: open });
      if (open) walk(node.children, depth + 1, id);
    });
  };
  walk(roots, 0, "");
  return out;
}

/** The node an id points at, or null. */
export function nodeAt(roots: ModuleNode[], id: NodeId): ModuleNode | null {
  let nodes = roots;
  let node: ModuleNode | null = null;
  for (const part of id.split("/")) {
    node = nodes[Number(part)] ?? null;
    if (!node) return null;
    nodes = node.children;
  }
  return node;
}

/** Ids of the node and all its ancestors ("0/2/1" -> ["0", "0/2", "0/2/1"]). */
export function ancestorIds(id: NodeId): NodeId[] {
  const parts = id.split("/");
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** Every id in the tree down to `maxDepth` levels (0 = roots only), for "expand all". */
export function idsToDepth(roots: ModuleNode[], maxDepth: number): Set<NodeId> {
  const out = new Set<NodeId>();
  const walk = (nodes: ModuleNode[], depth: number, prefix: string) => {
    if (depth > maxDepth) return;
    nodes.forEach((n, i) => {
      const id = prefix === "" ? String(i) : `${prefix}/${i}`;
      if (n.children.length > 0) out.add(id);
      walk(n.children, depth + 1, id);
    });
  };
  walk(roots, 0, "");
  return out;
}

export interface FlameRect {
  id: NodeId;
  node: ModuleNode;
  depth: number;
  /** Left edge and width as fractions (0..1) of the flame's width. */
  x: number;
  width: number;
}

/**
 * Flame layout: the focused node (or all roots) spans the full width; each node's width is its
 * host_total_us over the focus total, children are laid left to right from their parent's left edge
 * (widths clamped so a child never overflows its parent). Ancestors of the focus are drawn above it
 * at full width, so the path back stays clickable.
 */
export function flameLayout(roots: ModuleNode[], focus: NodeId | null = null): FlameRect[] {
  const rects: FlameRect[] = [];
  let top: { id: NodeId; node: ModuleNode }[];
  let depth0 = 0;
  if (focus !== null && nodeAt(roots, focus)) {
    const chain = ancestorIds(focus);
    chain.slice(0, -1).forEach((id, d) => {
      rects.push({ id, node: nodeAt(roots, id) as ModuleNode, depth: d, x: 0, width: 1 });
    });
    depth0 = chain.length - 1;
    top = [{ id: focus, node: nodeAt(roots, focus) as ModuleNode }];
  } else {
    top = roots.map((node, i) => ({ id: String(i), node }));
  }
  const total = top.reduce((s, t) => s + Math.max(0, t.node.host_total_us), 0);
  if (total <= 0) return rects;
  const place = (items: { id: NodeId; node: ModuleNode }[], depth: number, x0: number, room: number) => {
    let x = x0;
    for (const { id, node } of items) {
      const w = Math.min(Math.max(0, node.host_total_us) / total, x0 + room - x);
      if (w <= 0) continue;
      rects.push({ id, node, depth, x, width: w });
      place(
        node.children.map((c, i) => ({ id: `${id}/${i}`, node: c })),
        depth + 1,
        x,
        w,
      );
      x += w;
    }
  };
  place(top, depth0, 0, 1);
  return rects;
}
