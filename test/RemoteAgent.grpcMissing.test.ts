/**
 * A user without gRPC's optional packages, in a child process whose loader
 * refuses `@grpc/grpc-js` and `@bufbuild/protobuf`: only gRPC is lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as path from "node:path"

describe("RemoteAgent without @grpc/grpc-js and @bufbuild/protobuf", () => {
  it("a card that offers only gRPC fails naming what to install; one that also offers JSON-RPC falls back to it, said once when gRPC was asked for", () => {
    const out = execFileSync(
      "node",
      ["--import", "tsx", "--import", "./test/fixtures/blockModules.mjs", "test/fixtures/clientWithoutGrpc.ts"],
      {
        cwd: path.resolve(import.meta.dirname, ".."),
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, BLOCKED_PACKAGES: "@grpc/grpc-js|@bufbuild/protobuf" }
      }
    )
    expect(JSON.parse(out.trim().split("\n").at(-1)!)).toEqual({
      only: { tag: "AgentCardResolutionError", reason: "NoCompatibleTransport", names: true },
      fellBack: [
        { transport: "JSONRPC", outcome: "Completed", text: "over JSON-RPC" },
        { transport: "JSONRPC", outcome: "Completed", text: "over JSON-RPC" }
      ],
      // Said once, for the agent that asked for gRPC by name.
      warnings: [true]
    })
  }, 60_000)
})
