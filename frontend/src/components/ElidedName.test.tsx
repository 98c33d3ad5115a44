import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ElidedName, headWidth, splitForElision } from "./ElidedName";

const ROCM =
  "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1_LBSPPA128_WS64_WG64_4_1";

describe("ElidedName", () => {
  it("keeps the tail whole, where names that share a prefix differ", () => {
    const [head, tail] = splitForElision(ROCM);
    expect(head + tail).toBe(ROCM);
    expect(tail).toBe(ROCM.slice(-24));
    expect(splitForElision("aten::mm")).toEqual(["aten::mm".slice(0, 6), "mm"]);
    expect(splitForElision("")).toEqual(["", ""]);
    // a space at the cut stays visible: it goes to the tail, never the end of the clipped head
    const spaced = `${"a".repeat(27)} ${"b".repeat(14)}`; // 42 characters: the cut falls after the space
    expect(splitForElision(spaced)).toEqual(["a".repeat(27), ` ${"b".repeat(14)}`]);
  });

  it("carries the full name as its title and in its text", () => {
    render(<ElidedName text={ROCM} className="cell-kernel" />);
    const el = screen.getByTestId("elided-name");
    expect(el.getAttribute("title")).toBe(ROCM);
    expect(el.textContent).toBe(ROCM);
    expect(el.className).toBe("cell-name elided cell-kernel");
  });
});

describe("the head's width", () => {
  it("is cut only when the name overflows its box, by the tail's width", () => {
    expect(headWidth(520, 400, 100)).toBeNull();
    expect(headWidth(520, 1200, 150)).toBe(370);
    expect(headWidth(100, 1200, 150)).toBe(16);
  });
});
