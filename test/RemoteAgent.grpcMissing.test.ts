/**
 * A user without gRPC's optional packages: `@grpc/grpc-js` cannot be
 * imported. Only gRPC is lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import { Effect, Logger } from "effect"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { cardFor, sdkPeer } from "./fixtures/peers.js"

vi.mock("@grpc/grpc-js", () => {
  throw new Error("Cannot find package '@grpc/grpc-js'")
})

const grpcFirst = (rpcUrl: string) => {
  const card = cardFor(rpcUrl)
  return {
    ...card,
    supportedInterfaces: [{ url: "127.0.0.1:1", protocolBinding: "GRPC", protocolVersion: "1.0", tenant: "" }, ...card.supportedInterfaces]
  }
}

describe("RemoteAgent without @grpc/grpc-js and @bufbuild/protobuf", () => {
  it.scopedLive("a card that offers only gRPC fails its resolution naming what to install", () =>
    Effect.gen(function*() {
      const card = { ...cardFor("127.0.0.1:1", "GRPC") }
      const error = yield* Effect.flip(RemoteAgent.make({ name: "no-grpc", url: "http://127.0.0.1:1", card }))
      expect(error).toMatchObject({ _tag: "AgentCardResolutionError", reason: "NoCompatibleTransport" })
      expect(error.message).toContain("@grpc/grpc-js")
      expect(error.message).toContain("@bufbuild/protobuf")
    }))

  it.scopedLive("a card that also offers JSON-RPC falls back to it, gRPC preferred or not", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const warnings: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => logLevel.label === "WARN" && warnings.push(String(message)))
      )
      for (const transports of [undefined, ["GRPC"] as const]) {
        const agent = yield* RemoteAgent.make({ name: "no-grpc", url: peer.url, card: grpcFirst(`${peer.url}/rpc`), transports }).pipe(
          Effect.provide(capture)
        )
        expect(yield* agent.send("complete")).toMatchObject({ _tag: "Completed" })
      }
      expect(peer.methods()).toEqual(["SendMessage", "SendMessage"])
      // Said once, for the agent that asked for gRPC by name.
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("prefers gRPC")
      expect(warnings[0]).toContain("@grpc/grpc-js")
    }))
})
