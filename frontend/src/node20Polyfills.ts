// Vitest 5's reporter calls Map.groupBy, which Node 20 lacks (it arrived in Node 21); without this a
// failing test crashes the reporter instead of being printed. Loaded by vite.config.ts, in the main
// Vitest process. Build output is unaffected.
type GroupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K) => Map<K, T[]>;

const mapCtor = Map as unknown as { groupBy?: GroupBy };
if (typeof mapCtor.groupBy !== "function") {
  mapCtor.groupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K): Map<K, T[]> => {
    const groups = new Map<K, T[]>();
    let index = 0;
    for (const item of items) {
      const k = key(item, index++);
      const group = groups.get(k);
      if (group) group.push(item);
      else groups.set(k, [item]);
    }
    return groups;
  };
}

export {};
