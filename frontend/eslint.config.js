// Lint configuration for the frontend (flat config): ESLint's recommended rules, typescript-eslint's
// recommended rules, and the rules of hooks (call order, complete dependency lists) as errors.
// eslint-plugin-react-hooks 7 also ships React Compiler rules (refs read in render, setState in an
// effect, purity, …); they are left off: this bundle is not compiled by React Compiler, and the
// timeline deliberately keeps its canvas state in refs. `npm run lint` runs it; ./run_tests.sh fails
// on any finding.
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", "../tb_plugin/static/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.{ts,tsx,js}"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser, ...globals.node },
    },
    plugins: { "react-hooks": reactHooks },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
      // unused names are already type-check errors (tsconfig noUnusedLocals); `_name` marks a deliberate one
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
