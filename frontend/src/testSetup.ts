// Vitest setup: unmount what each test rendered (testing-library only does this itself with globals).
import { cleanup } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => {
  cleanup();
});
