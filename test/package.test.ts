import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { runWithout } from "./fixtures/blocked.js"

const root = path.resolve(import.meta.dirname, "..")

describe("the published package", () => {
  it("packs, installs into a fresh Effect 3 application, type-checks and runs; a CommonJS one is refused at compile time as at run time", () => {
    const out = execFileSync("node", ["scripts/check-pack.mjs"], { encoding: "utf8", timeout: 280_000 })
    const result = JSON.parse(out.trim().split("\n").at(-1)!)
    expect(result).toEqual({
      tarball: "effect-a2a-0.1.0.tgz",
      reason: "Unavailable",
      delivery: "NotSent",
      // Every internal path is closed, whichever room it is in.
      closed: ["ERR_PACKAGE_PATH_NOT_EXPORTED", "ERR_PACKAGE_PATH_NOT_EXPORTED", "ERR_PACKAGE_PATH_NOT_EXPORTED"],
      // ESM-only, and said so at compile time: a CommonJS project that requires the package does not type-check,
      // whichever resolution it uses, as the require fails at run time; its `import()` type-checks and runs.
      commonjs: {
        required: { node10: ["TS2307"], node16: ["TS2307"], nodenext: ["TS2307"] },
        imported: "compiled",
        ran: { required: "ERR_PACKAGE_PATH_NOT_EXPORTED", imported: "function" }
      }
    })
  }, 300_000)

  it("exports exactly its public modules", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
      readonly exports: Record<string, unknown>
    }
    const modules = fs.readdirSync(path.join(root, "src"))
      .filter((file) => file.endsWith(".ts") && file !== "index.ts" && file !== "bin.ts")
      .map((file) => `./${file.slice(0, -3)}`)
    expect(Object.keys(manifest.exports).sort()).toEqual([".", "./package.json", ...modules].sort())
  })

  it("a client loads no SQL driver: importing the package and using the client's modules needs none", () => {
    // A preloaded hook makes every load of better-sqlite3, pg and their Effect packages throw.
    expect(runWithout("clientWithoutSql.ts")).toEqual({
      reason: "Unavailable",
      told: "REMOTE_UNAVAILABLE",
      // The hook works: the SQLite ledger, built afterwards, is refused its driver.
      ledger: "Unavailable"
    })
  }, 60_000)

  it("the mountable routes need no Node platform: served by a web handler with @effect/platform-node refused", () => {
    const result = runWithout("routerWithoutNode.ts", "@effect/platform-node") as {
      card: string
      answer: { result: { task: { status: { state: string; message: { parts: Array<{ text: string }> } } } } }
      nodeServer: string
    }
    expect(result.card).toBe("web")
    expect(result.answer.result.task.status.state).toBe("TASK_STATE_COMPLETED")
    expect(result.answer.result.task.status.message.parts[0]?.text).toBe("served without node")
    // The hook works: starting the Node server, afterwards, is refused its platform.
    expect(result.nodeServer).toBe("refused")
  }, 60_000)
})
