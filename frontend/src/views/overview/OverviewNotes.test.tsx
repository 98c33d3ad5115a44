import { render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { OverviewReady } from "../../api/types";
import overviewFixture from "../../__fixtures__/overview_resnet50.json";
import { Overview } from "./Overview";

vi.mock("../../components/EChart", () => ({ EChart: (props: { testId?: string }) => <div data-testid={props.testId} /> }));

const overview = overviewFixture as unknown as OverviewReady;
const NOTE = "31052 events carry no duration (instant ×12840, flow end ×9096); they are not step work";

describe("Overview: notes are not warnings", () => {
  it("shows a file's notes collapsed under 'About this file', with no warning banner", () => {
    render(<Overview data={{ ...overview, warnings: [], notes: [NOTE, "<b>x</b>"] }} theme="light" />);
    expect(screen.queryByTestId("warnings")).toBeNull();
    const notes = screen.getByTestId("file-notes");
    expect(notes.tagName).toBe("DETAILS");
    expect((notes as HTMLDetailsElement).open).toBe(false);
    expect(notes.querySelector("summary")?.textContent).toBe("About this file");
    expect([...notes.querySelectorAll("li")].map((li) => li.textContent)).toEqual([NOTE, "<b>x</b>"]);
    expect(notes.querySelector("b")).toBeNull(); // text, never HTML
  });

  it("keeps real warnings as warnings, beside the notes", () => {
    render(<Overview data={{ ...overview, warnings: ["3 'B' events without an 'E' were skipped"], notes: [NOTE] }} theme="light" />);
    expect(screen.getByTestId("warnings").querySelector("summary")?.textContent).toBe("1 warning while reading this file");
    expect(screen.getByTestId("file-notes")).toBeTruthy();
  });

  it("shows nothing for a file without notes, or from a server that sends none", () => {
    const { unmount } = render(<Overview data={{ ...overview, warnings: [], notes: [] }} theme="light" />);
    expect(screen.queryByTestId("file-notes")).toBeNull();
    unmount();
    const { notes: _drop, ...older } = { ...overview, warnings: [], notes: undefined };
    render(<Overview data={older as OverviewReady} theme="light" />);
    expect(screen.queryByTestId("file-notes")).toBeNull();
    expect(document.body.textContent).not.toMatch(/undefined|null|NaN/);
  });
});
