// Vitest setup: unmount what each test rendered (testing-library only does this itself with globals).
import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

// CI machines have 2 cores and run the test files in parallel: give async queries room.
configure({ asyncUtilTimeout: 5000 });

afterEach(() => {
  cleanup();
});
