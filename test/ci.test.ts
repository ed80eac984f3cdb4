/**
 * The test run itself: a failing test must fail `npm test`, whatever the
 * test set-up registers on the process (see `globalSetup.postgres.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")

describe("the test run", () => {
  it("exits non-zero when a test fails, and zero when all pass, with the project's global set-up", () => {
    // Inside the project, so that the packages resolve; `.tmp` is ignored by git.
    fs.mkdirSync(path.join(root, ".tmp"), { recursive: true })
    const dir = fs.mkdtempSync(path.join(root, ".tmp", "exit-code-"))
    try {
      fs.writeFileSync(
        path.join(dir, "vitest.config.mjs"),
        `export default { test: { include: ["*.test.ts"], globalSetup: [${
          JSON.stringify(path.join(root, "test", "globalSetup.postgres.ts"))
        }] } }\n`
      )
      const run = (body: string) => {
        fs.writeFileSync(
          path.join(dir, "probe.test.ts"),
          `import { expect, it } from "vitest"\nit("probe", () => { ${body} })\n`
        )
        return spawnSync(process.execPath, [
          path.join(root, "node_modules", "vitest", "vitest.mjs"),
          "run",
          "--root",
          dir
        ], {
          cwd: dir,
          // An external database: the set-up imports the embedded one's package but starts nothing.
          env: { ...process.env, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" },
          encoding: "utf8",
          timeout: 100_000
        })
      }
      const failing = run("expect(1).toBe(2)")
      expect(failing.stdout + failing.stderr).toContain("1 failed")
      expect(failing.status).toBe(1)
      const passing = run("expect(1).toBe(1)")
      expect(passing.stdout + passing.stderr).toContain("1 passed")
      expect(passing.status).toBe(0)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 240_000)
})
