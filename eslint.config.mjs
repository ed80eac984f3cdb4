// The Effect monorepo's ESLint setup (Effect 3 line, eslint.config.mjs), kept rule for rule so that
// code here reads like Effect's own. What differs, and why:
// - typescript-eslint's flat configs stand in for FlatCompat and the legacy "extends" strings; they
//   are the same rule sets without @eslint/eslintrc and @eslint/compat.
// - eslint-plugin-import is loaded as it is: it speaks flat config since 2.31, so no fixupPluginRules.
// - No codegen (nothing here is generated from comments), no simple-import-sort and no
//   deprecation plugin (Effect turns both off), no import resolver (import/no-unresolved is off).
// - import/no-duplicates with prefer-inline: without it the rule files `import { A, type B }` with
//   the `import type` lines, and its fix then merged a value import into an `import type`
//   (typecheck broke); with it a module's value and type names share one import, types marked
//   inline.
// - Rules typescript-eslint 8 no longer has (ban-types, camelcase, interface-name-prefix,
//   member-delimiter-style) are left out rather than turned off.
// - Effect's per-package globs ("packages/*/src") become "src", "test"; the barrel rule names
//   every Effect package src imports (the house rule: Effect modules by path in src).
// - Effect allows `any`, `as unknown as` and non-null assertions (`!`) everywhere: its data types are
//   built on them. src here is code on top of Effect, where a type can nearly always say what is
//   meant, so all three are errors in src; the few that stay have an eslint-disable comment saying
//   why (`-- reason`).
// - `npm run lint` fails on warnings too: Effect's two warn rules fix themselves with --fix, and a
//   warning nobody has to clear is soon a hundred. It caches by content in .tmp (git-ignored).
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import _import from "eslint-plugin-import"
import sortDestructureKeys from "eslint-plugin-sort-destructure-keys"
import tseslint from "typescript-eslint"

const noPushSpread = {
  selector: "CallExpression[callee.property.name='push'] > SpreadElement.arguments",
  message: "Do not use spread arguments in Array.push"
}

const noDoubleCast = {
  selector: "TSAsExpression > TSAsExpression.expression[typeAnnotation.type='TSUnknownKeyword']",
  message: "`as unknown as` says nothing the types can check: say it with a type, or disable this line saying why"
}

// Plain .mjs scripts run on Node and nothing type-checks them, so no-undef stays on there and knows
// Node's globals: those of the Node that runs the linter.
const nodeGlobals = Object.fromEntries(Object.getOwnPropertyNames(globalThis).map((name) => [name, "readonly"]))

export default [
  {
    ignores: [
      "**/dist",
      "**/build",
      "**/docs",
      "**/coverage",
      "**/.tmp",
      "**/*.md"
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    plugins: {
      import: _import,
      "sort-destructure-keys": sortDestructureKeys
    },

    languageOptions: {
      parser: tseslint.parser,
      ecmaVersion: 2018,
      sourceType: "module"
    },

    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",

      "no-restricted-syntax": ["error", noPushSpread],

      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "import/first": "error",
      "import/newline-after-import": "error",
      "import/no-duplicates": ["error", { "prefer-inline": true }],
      "import/no-unresolved": "off",
      "import/order": "off",
      "sort-destructure-keys/sort-destructure-keys": "error",

      "@typescript-eslint/array-type": [
        "warn",
        {
          default: "generic",
          readonly: "generic"
        }
      ],

      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": "warn",

      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_"
        }
      ],

      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/explicit-function-return-type": "off",
      "@typescript-eslint/explicit-module-boundary-types": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-use-before-define": "off",
      "@typescript-eslint/no-namespace": "off",

      "@effect/dprint": [
        "error",
        {
          config: {
            indentWidth: 2,
            lineWidth: 120,
            semiColons: "asi",
            quoteStyle: "alwaysDouble",
            trailingCommas: "never",
            operatorPosition: "maintain",
            "arrowFunction.useParentheses": "force"
          }
        }
      ]
    }
  },
  {
    files: ["**/*.mjs"],
    languageOptions: {
      globals: nodeGlobals
    }
  },
  {
    files: ["src/**/*", "test/**/*"],
    rules: {
      "no-console": "error"
    }
  },
  {
    files: ["src/**/*"],
    rules: {
      "@effect/no-import-from-barrel-package": [
        "error",
        {
          packageNames: [
            "effect",
            "@effect/ai",
            "@effect/cli",
            "@effect/opentelemetry",
            "@effect/platform",
            "@effect/platform-node",
            "@effect/sql",
            "@effect/sql-pg",
            "@effect/sql-sqlite-node"
          ]
        }
      ],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
      "no-restricted-syntax": ["error", noPushSpread, noDoubleCast]
    }
  }
]
