import {
  type AgentCard,
  canonicalizeAgentCard,
  generateAgentCardSignature,
  verifyAgentCardSignature
} from "@a2a-js/sdk"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import { Console, Duration, Effect, Either, FastCheck as fc, Logger, LogLevel, Metric, Option } from "effect"
import * as jose from "jose"
import * as fs from "node:fs"
import type * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import * as Cli from "../src/Cli.js"
import * as internalProbe from "../src/cli/probe.js"
import { counter } from "../src/internal/client/call/call.js"
import * as trust from "../src/internal/client/card/trust.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { changedAt, type Json, leaves } from "./fixtures/json.js"
import { cardFor, closedPort, json, listen, rawPeer, rpcId, sdkPeer } from "./fixtures/peers.js"
import { captureLogs } from "./fixtures/serverAgents.js"

const header = { alg: "ES256", kid: "agent-key", typ: "JOSE" }

/** The agent's key pair, and a stranger's: from jose, as a signer we did not write would make them. */
const keys = Effect.promise(async () => {
  const agent = await jose.generateKeyPair("ES256", { extractable: true })
  const stranger = await jose.generateKeyPair("ES256", { extractable: true })
  const publicJwk = { ...(await jose.exportJWK(agent.publicKey)), kid: header.kid, alg: "ES256" }
  return { agent, stranger, publicJwk }
})

/** A card with a skill, so the canonical form has nested values of each kind. */
const richCard = (rpcUrl: string): AgentCard => ({
  ...cardFor(rpcUrl),
  skills: [{
    id: "book",
    name: "Book",
    description: "books a flight",
    tags: ["travel", "flights"],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: []
  }]
})

/** Serves, at the card path, what `card` makes of the server's base URL; counts requests. */
const cardServer = (card: (base: string) => Promise<unknown>) =>
  Effect.gen(function*() {
    const holder = { base: "" }
    const server = yield* listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url?.startsWith("/.well-known/agent-card.json")) {
        void card(holder.base).then((value) => json(res, 200, value))
      } else json(res, 404, {})
    })
    holder.base = server.url
    return server
  })

const resolve = (url: string, trustOption: RemoteAgent.Trust | undefined) =>
  RemoteAgent.make({
    name: "trusting",
    url,
    cardTimeout: "3 seconds",
    ...(trustOption === undefined ? {} : { trust: trustOption })
  })

/** The card at `url` refused for `reason`, its message saying `says`. */
const refused = (url: string, trustOption: RemoteAgent.Trust, reason: string, says: string) =>
  Effect.map(Effect.flip(resolve(url, trustOption)), (error) => {
    expect(error.reason).toBe(reason)
    expect(error.message).toContain(says)
    return error
  })

const sign = (key: jose.CryptoKey, card: AgentCard, protectedHeader: jose.JWSHeaderParameters = header) =>
  generateAgentCardSignature(key, protectedHeader)(card)

const b64 = (value: unknown) => jose.base64url.encode(JSON.stringify(value))

describe("RemoteAgent trust: signed cards", () => {
  it.scopedLive("a card signed by the SDK verifies, and is routed by what its signature covers", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer((base) => sign(agent.privateKey, richCard(`${base}/rpc`)))
      const remote = yield* resolve(server.url, { keys: [publicJwk] })
      expect(remote.transport).toBe("JSONRPC")
      const card = Option.getOrThrow(remote.card)
      expect(card.supportedInterfaces[0]?.url).toBe(`${server.url}/rpc`)
      // The SDK's own verifier agrees about the card we accepted.
      yield* Effect.promise(() =>
        verifyAgentCardSignature(() => jose.importJWK(publicJwk, "ES256") as Promise<jose.CryptoKey>)(card)
      )
    }))

  it.scopedLive("a URL changed after signing: InvalidSignature", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => {
        const signed = await sign(agent.privateKey, richCard(`${base}/rpc`))
        return {
          ...signed,
          supportedInterfaces: [{ ...signed.supportedInterfaces[0], url: "http://127.0.0.1:1/elsewhere" }]
        }
      })
      const before = yield* Metric.value(
        counter("a2a.card_resolution_error", "trusting", { reason: "InvalidSignature" })
      )
      const error = yield* refused(
        server.url,
        { keys: [publicJwk] },
        "InvalidSignature",
        "does not verify over this card"
      )
      expect(error.message).toContain("re-sign")
      const after = yield* Metric.value(
        counter("a2a.card_resolution_error", "trusting", { reason: "InvalidSignature" })
      )
      expect(after.count - before.count).toBe(1)
    }))

  it.scopedLive("a key not trusted: UntrustedSigner", () =>
    Effect.gen(function*() {
      const { publicJwk, stranger } = yield* keys
      const server = yield* cardServer((base) =>
        sign(stranger.privateKey, richCard(`${base}/rpc`), { ...header, kid: "stranger" })
      )
      yield* refused(server.url, { keys: [publicJwk] }, "UntrustedSigner", `no trusted key has kid "stranger"`)
    }))

  it.scopedLive("alg none: InvalidSignature", () =>
    Effect.gen(function*() {
      const { publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => ({
        ...richCard(`${base}/rpc`),
        signatures: [{ protected: b64({ alg: "none", kid: header.kid, typ: "JOSE" }), signature: "" }]
      }))
      yield* refused(server.url, { keys: [publicJwk] }, "InvalidSignature", "alg none is refused")
    }))

  it.scopedLive("HS256 made with the public key as the secret: InvalidSignature", () =>
    Effect.gen(function*() {
      const { publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => {
        const card = richCard(`${base}/rpc`)
        const secret = new TextEncoder().encode(JSON.stringify(publicJwk))
        const jws = await new jose.FlattenedSign(new TextEncoder().encode(canonicalizeAgentCard(card)))
          .setProtectedHeader({ alg: "HS256", kid: header.kid, typ: "JOSE" })
          .sign(secret)
        return { ...card, signatures: [{ protected: jws.protected, signature: jws.signature }] }
      })
      yield* refused(server.url, { keys: [publicJwk] }, "InvalidSignature", "alg HS256 is refused")
    }))

  it.scopedLive("unsigned when a signature is required: Unsigned; accepted when it is not", () =>
    Effect.gen(function*() {
      const { publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => richCard(`${base}/rpc`))
      yield* refused(server.url, { keys: [publicJwk] }, "Unsigned", "trust.required")
      const remote = yield* resolve(server.url, { keys: [publicJwk], required: false })
      expect(remote.transport).toBe("JSONRPC")
    }))

  it.scopedLive("the refusals of several signatures are logged once through Effect, and nothing on the console", () =>
    Effect.gen(function*() {
      const { agent, publicJwk, stranger } = yield* keys
      const server = yield* cardServer(async (base) => {
        const card = richCard(`${base}/rpc`)
        const byStranger = await sign(stranger.privateKey, card, { ...header, kid: "stranger" })
        const both = await sign(agent.privateKey, byStranger)
        return { ...both, name: "changed after signing" }
      })
      const logs = captureLogs()
      const debug: Array<unknown> = []
      /* eslint-disable no-console -- catches what the SDK writes to console.debug */
      const original = console.debug
      console.debug = (...args: Array<unknown>) => void debug.push(args)
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] })).pipe(
        Effect.provide(logs.layer),
        Logger.withMinimumLogLevel(LogLevel.Debug),
        Effect.ensuring(Effect.sync(() => (console.debug = original)))
      )
      /* eslint-enable no-console */
      // One signature is by a stranger, the other no longer matches the card: the card was changed.
      expect(error.reason).toBe("InvalidSignature")
      const refusals = logs.lines.filter((line) => line.message.includes("signature(s) were refused"))
      expect(refusals).toHaveLength(1)
      expect(refusals[0]!.message).toContain(`no trusted key has kid "stranger"`)
      expect(debug).toEqual([])
    }))

  it.scopedLive("a jku naming an untrusted URL is never fetched", () =>
    Effect.gen(function*() {
      const { publicJwk, stranger } = yield* keys
      const strangerJwk = { ...(yield* Effect.promise(() => jose.exportJWK(stranger.publicKey))), kid: "stranger" }
      const jku = yield* listen((_req, res) => json(res, 200, { keys: [strangerJwk] }))
      const server = yield* cardServer((base) =>
        sign(stranger.privateKey, richCard(`${base}/rpc`), { ...header, kid: "stranger", jku: `${jku.url}/jwks.json` })
      )
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("UntrustedSigner")
      expect(jku.requests()).toBe(0)
    }))

  it.scopedLive("a v0.3-shaped card whose url is changed after signing: InvalidSignature, saying why", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => {
        const legacy = {
          name: "legacy",
          description: "a v0.3 card",
          url: `${base}/rpc`,
          preferredTransport: "JSONRPC",
          protocolVersion: "0.3.0",
          version: "1.0.0",
          capabilities: { streaming: false },
          defaultInputModes: ["text/plain"],
          defaultOutputModes: ["text/plain"],
          skills: []
        }
        const signed = await sign(agent.privateKey, legacy as unknown as AgentCard)
        return { ...signed, url: "http://127.0.0.1:1/elsewhere" }
      })
      const error = yield* refused(server.url, { keys: [publicJwk] }, "InvalidSignature", "signed in v0.3 form")
      expect(error.message).toContain("never verifies after translation")
    }))

  it.scopedLive("v0.3 fields added to a signed v1.0 card are not routed by: the covered interface is", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => ({
        ...(await sign(agent.privateKey, richCard(`${base}/rpc`))),
        url: "http://127.0.0.1:1/elsewhere",
        preferredTransport: "HTTP+JSON",
        additionalInterfaces: [{ url: "http://127.0.0.1:1/elsewhere", transport: "HTTP+JSON" }]
      }))
      const remote = yield* resolve(server.url, { keys: [publicJwk] })
      expect(remote.transport).toBe("JSONRPC")
      expect(Option.getOrThrow(remote.card).supportedInterfaces.map((i) => i.url)).toEqual([`${server.url}/rpc`])
    }))

  it.scopedLive("an extended card is checked too: an unsigned one behind a signed card is Unsigned", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const peer = yield* rawPeer(
        (_req, res, body) =>
          json(res, 200, { jsonrpc: "2.0", id: rpcId(body), result: cardFor("http://127.0.0.1:1/rpc") }),
        (_req, res, base) => {
          const card = richCard(`${base}/rpc`)
          void sign(agent.privateKey, { ...card, capabilities: { ...card.capabilities!, extendedAgentCard: true } })
            .then((signed) => json(res, 200, signed))
        }
      )
      yield* refused(peer.url, { keys: [publicJwk] }, "Unsigned", "carries no signature")
      expect(peer.methods()).toEqual(["GetExtendedAgentCard"])
    }))

  it.scopedLive("a JWKS URL is fetched once while the layer is built", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const jwks = yield* listen((_req, res) => json(res, 200, { keys: [publicJwk] }))
      const server = yield* cardServer((base) => sign(agent.privateKey, richCard(`${base}/rpc`)))
      const remote = yield* resolve(server.url, { jwks: `${jwks.url}/jwks.json` })
      expect(remote.transport).toBe("JSONRPC")
      expect(jwks.requests()).toBe(1)
      // A JWKS that cannot be read stops start-up as an unreachable card does.
      yield* refused(server.url, { jwks: `${yield* closedPort}/jwks.json` }, "Unreachable", "the trusted JWKS at")
    }))

  it.scopedLive("a resolver is given the protected header, and may answer with a JWK", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer((base) => sign(agent.privateKey, richCard(`${base}/rpc`)))
      const kids: Array<string | undefined> = []
      const remote = yield* resolve(server.url, { resolve: (h) => Effect.sync(() => (kids.push(h.kid), publicJwk)) })
      expect(remote.transport).toBe("JSONRPC")
      expect(kids).toEqual([header.kid])
    }))
})

describe("RemoteAgent trust: what the signature covers", () => {
  it.effect("any change to a value in the canonical form of a signed card fails verification", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const signed = yield* Effect.promise(() => sign(agent.privateKey, richCard("http://127.0.0.1:1/rpc")))
      // The canonical form, as JSON a signer would serve, with the signature put back.
      const canonical = JSON.parse(canonicalizeAgentCard(signed)) as Json
      const lookup = yield* Effect.orDie(trust.lookup({ keys: [publicJwk] }, fetch))
      const check = (card: unknown) =>
        Effect.runPromise(Effect.either(trust.verify(lookup, true, card, card as AgentCard)))
      const served = (card: Json) => ({ ...(card as object), signatures: signed.signatures })
      // The property could fail: the untouched canonical card verifies.
      expect(Either.isRight(yield* Effect.promise(() => check(served(canonical))))).toBe(true)
      const paths = leaves(canonical)
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...paths),
            fc.string({ minLength: 1, maxLength: 4 }),
            async (path, suffix) => {
              const result = await check(served(changedAt(canonical, path, suffix)))
              return Either.isLeft(result) && result.left.reason === "InvalidSignature"
            }
          ),
          { numRuns: 60 }
        )
      )
    }))
})

describe("probe: signed in the report, and --trust", () => {
  it.scopedLive("reports whether the card is signed, and verifies it with --trust from a JWK file or a JWKS file", () =>
    Effect.gen(function*() {
      const { agent, publicJwk, stranger } = yield* keys
      const peer = yield* sdkPeer()
      // The SDK's peer answers; our card server serves its card, signed.
      const signedCard = yield* cardServer(() => sign(agent.privateKey, richCard(`${peer.url}/rpc`)))
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-trust-"))
      const jwkFile = path.join(dir, "agent.jwk.json")
      const jwksFile = path.join(dir, "agent.jwks.json")
      const strangerFile = path.join(dir, "stranger.jwk.json")
      fs.writeFileSync(jwkFile, JSON.stringify(publicJwk))
      fs.writeFileSync(jwksFile, JSON.stringify({ keys: [publicJwk] }))
      fs.writeFileSync(
        strangerFile,
        JSON.stringify({ ...(yield* Effect.promise(() => jose.exportJWK(stranger.publicKey))), kid: header.kid })
      )
      const probe = (url: string, trustFile?: string) =>
        Cli.probe({
          url,
          text: "complete",
          timeout: Duration.seconds(5),
          ...(trustFile === undefined ? {} : { trust: Either.getOrThrow(internalProbe.parseTrust(trustFile)) })
        })
      expect(yield* probe(peer.url)).toMatchObject({ channel: "Outcome", outcome: "Completed", signed: false })
      expect(yield* probe(signedCard.url)).toMatchObject({ channel: "Outcome", outcome: "Completed", signed: true })
      expect(yield* probe(signedCard.url, jwkFile)).toMatchObject({
        channel: "Outcome",
        outcome: "Completed",
        signed: true
      })
      expect(yield* probe(signedCard.url, jwksFile)).toMatchObject({ channel: "Outcome", signed: true })
      // The stranger's key under the agent's kid: the signature does not verify with it.
      const refused = yield* probe(signedCard.url, strangerFile)
      expect(refused).toMatchObject({ channel: "CardResolution", reason: "InvalidSignature" })
      expect(refused.signed).toBeUndefined()
      expect(Cli.probeExitCode(refused)).toBe(3)
      expect(yield* probe(peer.url, jwkFile)).toMatchObject({ channel: "CardResolution", reason: "Unsigned" })
      expect(internalProbe.parseTrust("https://keys.example/agent.jwks.json")).toEqual(
        Either.right({ jwks: "https://keys.example/agent.jwks.json" })
      )
      expect(Either.isLeft(internalProbe.parseTrust(path.join(dir, "missing.json")))).toBe(true)
    }))

  it.scopedLive("effect-a2a probe --trust --json prints signed, and exits 3 when the card does not verify", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const peer = yield* sdkPeer()
      const signedCard = yield* cardServer(() => sign(agent.privateKey, richCard(`${peer.url}/rpc`)))
      const jwks = yield* listen((_req, res) => json(res, 200, { keys: [publicJwk] }))
      const run = (args: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const out: Array<string> = []
          const console = yield* Console.consoleWith(Effect.succeed)
          const code = yield* Cli.run(["node", "effect-a2a", "probe", ...args, "--json", "--text", "complete"]).pipe(
            Effect.withConsole({
              ...console,
              log: (...text: ReadonlyArray<unknown>) => Effect.sync(() => out.push(text.join(" ")))
            }),
            Effect.provide(NodeContext.layer)
          )
          return { code, report: JSON.parse(out.join("\n")) as Cli.ProbeReport }
        })
      const verified = yield* run([signedCard.url, "--trust", `${jwks.url}/jwks.json`])
      expect(verified).toMatchObject({ code: 0, report: { channel: "Outcome", signed: true } })
      const unsigned = yield* run([peer.url, "--trust", `${jwks.url}/jwks.json`])
      expect(unsigned).toMatchObject({ code: 3, report: { channel: "CardResolution", reason: "Unsigned" } })
    }))
})
