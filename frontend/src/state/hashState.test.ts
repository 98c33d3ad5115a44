import { describe, expect, it } from "vitest";
import { parseHash, serializeHash, urlWithHash, writeHash } from "./hashState";

describe("hash state", () => {
  const odd = [
    { run: "plain", worker: "worker0", span: "1" },
    { run: "runs/2024 05/bert #3 & friends", worker: "host a&b=c", span: "2" },
    { run: "ñandú/日本語/🚀", worker: "wörker#1", span: "10" },
    { run: ".", worker: "a+b%20c", span: "1" },
    { run: "?x=1&y=2#z", worker: "", span: "3" },
  ];

  for (const sel of odd) {
    it(`round-trips ${JSON.stringify(sel)}`, () => {
      const hash = serializeHash(sel);
      expect(hash.startsWith("#")).toBe(true);
      // Only the three separators appear raw: "&" between keys and "=" after each key.
      expect(hash.slice(1).split("&")).toHaveLength(3);
      expect(hash.indexOf("#", 1)).toBe(-1);
      expect(parseHash(hash)).toEqual(sel);
    });
  }

  it("encodes the separators that would break the hash", () => {
    expect(serializeHash({ run: "a/b&c#d e", worker: "w", span: "1" })).toBe(
      "#run=a%2Fb%26c%23d+e&worker=w&span=1",
    );
  });

  it("parses with or without the leading #, and ignores unknown keys", () => {
    expect(parseHash("run=r&worker=w&span=2&tab=x")).toEqual({ run: "r", worker: "w", span: "2" });
    expect(parseHash("#run=r")).toEqual({ run: "r" });
    expect(parseHash("")).toEqual({});
    expect(parseHash("#")).toEqual({});
  });

  it("decodes %20 as well as +", () => {
    expect(parseHash("#run=a%20b+c")).toEqual({ run: "a b c" });
  });

  it("builds an absolute URL with only the hash changed", () => {
    const href = "http://localhost:6006/data/plugin_entry.html?name=kinetoscope#run=old";
    expect(urlWithHash(href, "#run=new%2Fx")).toBe(
      "http://localhost:6006/data/plugin_entry.html?name=kinetoscope#run=new%2Fx",
    );
  });

  it("writes the hash with replaceState and an absolute URL (a <base href> must not change the path)", () => {
    const calls: [unknown, string, string][] = [];
    const fakeWindow = {
      location: { hash: "", href: "http://tb:6006/prefix/data/plugin_entry.html?name=kinetoscope" },
      history: {
        state: null,
        replaceState: (state: unknown, title: string, url: string) => calls.push([state, title, url]),
      },
    } as unknown as Window;
    writeHash({ run: "r 1", worker: "w", span: "1" }, fakeWindow);
    expect(calls).toEqual([
      [null, "", "http://tb:6006/prefix/data/plugin_entry.html?name=kinetoscope#run=r+1&worker=w&span=1"],
    ]);
  });

  it("does not write when the hash is already current", () => {
    let writes = 0;
    const fakeWindow = {
      location: { hash: "#run=r&worker=w&span=1", href: "http://tb/x#run=r&worker=w&span=1" },
      history: { state: null, replaceState: () => (writes += 1) },
    } as unknown as Window;
    writeHash({ run: "r", worker: "w", span: "1" }, fakeWindow);
    expect(writes).toBe(0);
  });
});

describe("selection memory", () => {
  it("prefers the hash, else recalls the stored selection", async () => {
    const { initialSelection, rememberSelection, STORAGE_KEY } = await import("./selectionMemory");
    const store = new Map<string, string>();
    const storage = {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
    } as unknown as Storage;
    rememberSelection({ run: "a/b #c", worker: "w", span: "2" }, storage);
    expect(store.get(STORAGE_KEY)).toBe("#run=a%2Fb+%23c&worker=w&span=2");
    expect(initialSelection("", storage)).toEqual({ run: "a/b #c", worker: "w", span: "2" });
    expect(initialSelection("#run=x", storage)).toEqual({ run: "x" });
  });

  it("survives storage that throws", async () => {
    const { initialSelection, rememberSelection } = await import("./selectionMemory");
    const broken = {
      getItem: () => {
        throw new DOMException("denied", "SecurityError");
      },
      setItem: () => {
        throw new DOMException("denied", "SecurityError");
      },
    } as unknown as Storage;
    expect(() => rememberSelection({ run: "r" }, broken)).not.toThrow();
    expect(initialSelection("", broken)).toEqual({});
  });
});
