import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"

describe("the published package", () => {
  it("packs, installs into a fresh Effect 3 application, type-checks and runs", () => {
    const out = execFileSync("node", ["scripts/check-pack.mjs"], { encoding: "utf8", timeout: 180_000 })
    const result = JSON.parse(out.trim().split("\n").at(-1)!)
    expect(result).toEqual({ tarball: "effect-a2a-0.1.0.tgz", reason: "Unavailable", delivery: "NotSent" })
  }, 200_000)
})
