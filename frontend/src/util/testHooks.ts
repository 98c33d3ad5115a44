// Browser-test hooks (`window.__kinetoscopeTimeline`, `window.__kinetoscopeMemory`) are installed only
// when a test asks for them: localStorage "kinetoscope.testHooks" = "1", which tests/e2e set with an
// init script (tests/e2e/helpers.py enable_test_hooks). Users' pages never carry them.
export const TEST_HOOKS_KEY = "kinetoscope.testHooks";

/** Whether this page runs under a test that asked for the hooks. */
export function testHooksEnabled(): boolean {
  try {
    return window.localStorage.getItem(TEST_HOOKS_KEY) === "1";
  } catch {
    return false; // storage blocked (sandboxed iframe, privacy settings): no hooks
  }
}
