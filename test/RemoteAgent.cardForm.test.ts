import { DefaultAgentCardResolver } from "@a2a-js/sdk/client"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { oauthSchemes, tokenUrl } from "./fixtures/cards.js"
import { sdkPeer } from "./fixtures/peers.js"

const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.completedText("ok"))

/** The token URL of a card's OAuth2 scheme, as our client read it. */
const tokenUrlOf = (remote: RemoteAgent.RemoteAgent) => {
  const scheme = Option.getOrThrow(remote.card).securitySchemes?.oauth?.scheme
  return scheme?.$case === "oauth2SecurityScheme" && scheme.value.flows?.flow?.$case === "clientCredentials"
    ? scheme.value.flows.flow.value.tokenUrl
    : undefined
}

describe("RemoteAgent reads both forms of a v1.0 card", () => {
  it.scopedLive("our server's proto JSON: decoded, its security schemes and empty fields in the SDK's model", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent,
        card: { name: "proto", description: "proto JSON", securitySchemes: oauthSchemes }
      })
      // As served: proto JSON, each scheme under its oneof's name, the empty lists left out.
      const served = yield* Effect.promise(() =>
        fetch(`${server.url}${A2AServer.cardPath}`, { headers: { "A2A-Version": "1.0" } }).then((r) =>
          r.json() as Promise<Record<string, any>>
        )
      )
      expect(served.securitySchemes.oauth.oauth2SecurityScheme.flows.clientCredentials.tokenUrl).toBe(tokenUrl)
      expect(served.skills).toBeUndefined()
      const remote = yield* RemoteAgent.make({ name: "proto", url: server.url })
      expect(tokenUrlOf(remote)).toBe(tokenUrl)
      expect(Option.getOrThrow(remote.card).skills).toEqual([])
      expect(yield* remote.send("hi")).toMatchObject({ _tag: "Completed", text: "ok" })
    }))

  it.scopedLive("the SDK's Express card handler's object form: its security schemes kept, which the SDK's own resolver loses", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer({ securitySchemes: oauthSchemes })
      const remote = yield* RemoteAgent.make({ name: "object", url: peer.url })
      expect(tokenUrlOf(remote)).toBe(tokenUrl)
      expect(yield* remote.send("complete")).toMatchObject({ _tag: "Completed" })
      // What the SDK's resolver alone makes of the same card: it reads it as proto JSON, and the scheme is gone.
      const sdkRead = yield* Effect.promise(() => new DefaultAgentCardResolver().resolve(`${peer.url}/`))
      expect(sdkRead.securitySchemes?.oauth?.scheme).toBeUndefined()
    }))
})
