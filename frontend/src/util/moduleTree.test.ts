import { describe, expect, it } from "vitest";
import type { ModuleNode } from "../api/types";
import modulesFixture from "../__fixtures__/modules_bert.json";
import { ancestorIds, flameLayout, flattenTree, idsToDepth, nodeAt } from "./moduleTree";

function node(name: string, host: number, children: ModuleNode[] = []): ModuleNode {
  return {
    name,
    occurrences: 1,
    operators: 0,
    host_total_us: host,
    host_self_us: host - children.reduce((s, c) => s + c.host_total_us, 0),
    device_total_us: 0,
    device_self_us: 0,
    children,
  };
}

const TREE = [node("A", 100, [node("B", 60, [node("D", 30)]), node("C", 20)]), node("E", 100)];

describe("module tree", () => {
  it("flattens depth-first, showing children of expanded nodes only", () => {
    expect(flattenTree(TREE, new Set()).map((r) => r.node.name)).toEqual(["A", "E"]);
    const rows = flattenTree(TREE, new Set(["0", "0/0"]));
    expect(rows.map((r) => [r.id, r.node.name, r.depth, r.hasChildren, r.expanded])).toEqual([
      ["0", "A", 0, true, true],
      ["0/0", "B", 1, true, true],
      ["0/0/0", "D", 2, false, false],
      ["0/1", "C", 1, false, false],
      ["1", "E", 0, false, false],
    ]);
    // a collapsed parent hides an expanded grandchild
    expect(flattenTree(TREE, new Set(["0/0"])).map((r) => r.node.name)).toEqual(["A", "E"]);
  });

  it("finds nodes by id and lists ancestors", () => {
    expect(nodeAt(TREE, "0/0/0")?.name).toBe("D");
    expect(nodeAt(TREE, "0/5")).toBeNull();
    expect(ancestorIds("0/1/2")).toEqual(["0", "0/1", "0/1/2"]);
    expect([...idsToDepth(TREE, 0)]).toEqual(["0"]);
    expect([...idsToDepth(TREE, 5)].sort()).toEqual(["0", "0/0"]);
  });

  it("lays out the flame with widths proportional to host total, children from the parent's left edge", () => {
    const rects = flameLayout(TREE);
    const by = Object.fromEntries(rects.map((r) => [r.node.name, r]));
    expect(by.A).toMatchObject({ depth: 0, x: 0, width: 0.5 });
    expect(by.E).toMatchObject({ depth: 0, x: 0.5, width: 0.5 });
    expect(by.B).toMatchObject({ depth: 1, x: 0, width: 0.3 });
    expect(by.C?.depth).toBe(1);
    expect(by.C?.x).toBeCloseTo(0.3);
    expect(by.C?.width).toBeCloseTo(0.1);
    expect(by.D).toMatchObject({ depth: 2, x: 0, width: 0.15 });
  });

  it("focusing a node gives it the full width, with its ancestors above it", () => {
    const rects = flameLayout(TREE, "0/0");
    const by = Object.fromEntries(rects.map((r) => [r.node.name, r]));
    expect(by.A).toMatchObject({ depth: 0, x: 0, width: 1 });
    expect(by.B).toMatchObject({ depth: 1, x: 0, width: 1 });
    expect(by.D).toMatchObject({ depth: 2, x: 0, width: 0.5 });
    expect(by.C).toBeUndefined();
    expect(by.E).toBeUndefined();
  });

  it("clamps children that add up to more than their parent", () => {
    const rects = flameLayout([node("P", 10, [node("X", 8), node("Y", 8)])]);
    const y = rects.find((r) => r.node.name === "Y");
    expect(y?.x).toBeCloseTo(0.8);
    expect(y?.width).toBeCloseTo(0.2);
  });

  it("agrees with the tree table on the real BERT fixture: every node, same numbers", () => {
    const roots = (modulesFixture as { modules: ModuleNode[] }).modules;
    const all = idsToDepth(roots, 100);
    const rows = flattenTree(roots, all);
    const rects = flameLayout(roots);
    const visible = rects.filter((r) => r.width > 0);
    for (const r of visible) {
      const row = rows.find((x) => x.id === r.id);
      expect(row?.node).toBe(r.node);
      expect(row?.depth).toBe(r.depth);
    }
    const rootTotal = roots.reduce((s, n) => s + n.host_total_us, 0);
    for (const r of visible) {
      if (r.width < r.node.host_total_us / rootTotal - 1e-9) continue; // clamped
      expect(r.width).toBeCloseTo(r.node.host_total_us / rootTotal, 9);
    }
    expect(visible.length).toBeGreaterThan(10);
  });
});
