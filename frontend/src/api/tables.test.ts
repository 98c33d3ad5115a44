import { describe, expect, it } from "vitest";
import { modulesUrl, operatorStacksUrl, parseTableQuery, tableCsvUrl, tableQueryString, tableUrl, type TableQuery } from "./routes";

const SEL = { run: "runs/a b&c#1", worker: "w0", span: "2" };

describe("table query strings", () => {
  it("puts run/worker/span first, then the table parameters in a fixed order", () => {
    const q: TableQuery = { group_by: "input_shape", sort: "host_self_us", order: "asc", search: "conv2d", offset: 200, limit: 100 };
    expect(tableUrl("operators", SEL, q)).toBe(
      "operators?run=runs%2Fa+b%26c%231&worker=w0&span=2&group_by=input_shape&sort=host_self_us&order=asc&search=conv2d&offset=200&limit=100",
    );
  });

  it("round-trips sort/order/offset/search/group_by/op_search", () => {
    const q: TableQuery = {
      group_by: "kernel_op_config",
      sort: "mean_us",
      order: "desc",
      search: "sgemm <128>&x",
      op_search: "aten::addmm",
      offset: 1000,
      limit: 100,
    };
    const parsed = parseTableQuery(tableQueryString(SEL, q));
    expect(parsed.selection).toEqual(SEL);
    expect(parsed.query).toEqual(q);
  });

  it("leaves out empty parameters, so the server applies its defaults", () => {
    expect(tableQueryString(SEL, { group_by: "operator", sort: undefined, search: "", offset: 0, limit: 100 })).toBe(
      "run=runs%2Fa+b%26c%231&worker=w0&span=2&group_by=operator&offset=0&limit=100",
    );
  });

  it("the CSV link carries the same query without paging, as a relative URL", () => {
    const q: TableQuery = { group_by: "operator", sort: "calls", order: "asc", search: "add", offset: 300, limit: 100 };
    const csv = tableCsvUrl("operators", SEL, q);
    expect(csv.startsWith("operators.csv?")).toBe(true);
    const parsed = parseTableQuery(csv.slice("operators.csv?".length));
    expect(parsed.selection).toEqual(SEL);
    expect(parsed.query).toEqual({ group_by: "operator", sort: "calls", order: "asc", search: "add" });
    expect(tableCsvUrl("kernels", SEL, { op_search: "conv" })).toBe(
      "kernels.csv?run=runs%2Fa+b%26c%231&worker=w0&span=2&op_search=conv",
    );
  });

  it("stacks and modules URLs are relative and encoded", () => {
    expect(operatorStacksUrl(SEL, "17", "call_stack")).toBe(
      "operator_stacks?run=runs%2Fa+b%26c%231&worker=w0&span=2&key=17&group_by=call_stack",
    );
    expect(modulesUrl(SEL)).toBe("modules?run=runs%2Fa+b%26c%231&worker=w0&span=2");
  });
});
