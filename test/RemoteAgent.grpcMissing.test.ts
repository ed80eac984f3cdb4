/**
 * A user without gRPC's optional packages, in a child process whose loader
 * refuses `@grpc/grpc-js` and `@bufbuild/protobuf`: only gRPC is lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { runWithout } from "./fixtures/blocked.js"

describe("RemoteAgent without @grpc/grpc-js and @bufbuild/protobuf", () => {
  it(
    "a card that offers only gRPC fails naming what to install; one that also offers JSON-RPC falls back to it, said once when gRPC was asked for",
    () => {
      expect(runWithout("clientWithoutGrpc.ts", "@grpc/grpc-js|@bufbuild/protobuf")).toEqual({
        only: { tag: "AgentCardResolutionError", reason: "NoCompatibleTransport", names: true },
        fellBack: [
          { transport: "JSONRPC", outcome: "Completed", text: "over JSON-RPC" },
          { transport: "JSONRPC", outcome: "Completed", text: "over JSON-RPC" }
        ],
        // Said once, for the agent that asked for gRPC by name.
        warnings: [true]
      })
    },
    60_000
  )
})
