/**
 * A body over the server's limit gets its 413, with its body, on JSON-RPC
 * and HTTP+JSON and every way the server can be run, never a connection
 * reset while the client is still writing; and gRPC its refusal.
 */
import { GRPC_STATUS_CODE } from "@a2a-js/sdk/errors/grpc"
import { A2AService } from "@a2a-js/sdk/server/grpc"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Grpc from "@grpc/grpc-js"
import { Effect } from "effect"
import { identity } from "effect/Function"
import * as Http from "node:http"
import * as net from "node:net"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"

const card = { name: "body-limit", description: "bodies over the limit" }
const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.completedText("done"))

const limit = 1024 * 1024
const size = 4 * 1024 * 1024
const tries = 6

interface Answer {
  readonly status?: number
  readonly text?: string
  readonly error?: string
}

/**
 * A POST of `size` bytes, its length declared or chunked, on a connection of
 * its own, from a client that reads the answer only once it has written the
 * whole request (as Python's `requests` does): what a server that closes on
 * a body it has not read resets.
 */
const oversized = (url: string, chunked: boolean) =>
  Effect.async<Answer>((resume) => {
    const target = new URL(url)
    const socket = net.connect(Number(target.port), target.hostname)
    // Nothing is read off the connection before the request is written.
    socket.pause()
    let received = ""
    // The answer once whole: its length declared, or chunked.
    const answer = (): Answer | undefined => {
      const head = received.indexOf("\r\n\r\n")
      if (head === -1) return undefined
      const headers = received.slice(0, head)
      let text = received.slice(head + 4)
      if (/\r\ntransfer-encoding: *chunked/i.test(headers)) {
        if (!text.endsWith("0\r\n\r\n")) return undefined
        text = text.replace(/(?:^|\r\n)[0-9a-f]+\r\n/gi, "")
      } else if (!(text.length >= Number(/\r\ncontent-length: *(\d+)/i.exec(headers)?.[1] ?? Number.NaN))) {
        return undefined
      }
      return { status: Number(received.slice(9, 12)), text }
    }
    const done = (result: Answer) => {
      socket.destroy()
      resume(Effect.succeed(result))
    }
    socket.on("error", (error: NodeJS.ErrnoException) => done({ error: error.code ?? error.message }))
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1")
      const read = answer()
      if (read !== undefined) done(read)
    })
    socket.on("end", () => done(answer() ?? { error: `ended after ${JSON.stringify(received.slice(0, 200))}` }))
    const length = chunked ? "transfer-encoding: chunked" : `content-length: ${size}`
    socket.write(
      `POST ${target.pathname} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\na2a-version: 1.0\r\n${length}\r\n\r\n`
    )
    const piece = Buffer.alloc(64 * 1024, "x")
    let written = 0
    const pump = (): void => {
      while (written < size) {
        written += piece.length
        const frame = chunked
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
          : piece
        if (!socket.write(frame)) return void socket.once("drain", pump)
      }
      socket.write(chunked ? "0\r\n\r\n" : "", () => socket.resume())
    }
    pump()
    return Effect.sync(() => socket.destroy())
  }).pipe(Effect.timeout("20 seconds"))

/** Every try, declared and chunked, answered 413 with the transport's own refusal. */
const everyTry = (url: string, check: (answer: Answer) => void) =>
  Effect.gen(function*() {
    for (let i = 0; i < tries; i++) {
      for (const chunked of [false, true]) {
        const answer = yield* oversized(url, chunked)
        expect(answer, `try ${i}, ${chunked ? "chunked" : "declared"}`).toMatchObject({ status: 413 })
        check(answer)
      }
    }
  })

const jsonRpcRefusal = (answer: Answer) => {
  expect(JSON.parse(answer.text!).error).toMatchObject({ code: -32602, data: [{ reason: "INVALID_PARAMS" }] })
}

const restRefusal = (answer: Answer) => {
  expect(JSON.parse(answer.text!).error).toMatchObject({
    code: 413,
    status: "INVALID_ARGUMENT",
    details: [{ reason: "INVALID_PARAMS" }]
  })
}

/** The status of a raw `SendMessage` of `bytes` over gRPC. */
const grpcCall = (address: string, bytes: Uint8Array) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new Grpc.Client(address, Grpc.credentials.createInsecure())),
    (client) =>
      Effect.async<number>((resume) => {
        const metadata = new Grpc.Metadata()
        metadata.set("a2a-version", "1.0")
        client.makeUnaryRequest(A2AService.sendMessage.path, identity, identity, Buffer.from(bytes), metadata, {
          deadline: Date.now() + 10_000
        }, (error) => resume(Effect.succeed(error === null ? GRPC_STATUS_CODE.OK : error.code)))
      }),
    (client) => Effect.sync(() => client.close())
  )

describe("A2AServer: a body over the limit", () => {
  it.scopedLive(
    "gets its 413 on JSON-RPC and HTTP+JSON, every time, the server answering on the Node listener",
    () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({ agent, card, maxBodyBytes: limit })
        yield* everyTry(server.rpcUrl, jsonRpcRefusal)
        yield* everyTry(`${server.urls["HTTP+JSON"]}/message:send`, restRefusal)
      }),
    120_000
  )

  it.scopedLive(
    "gets its refusal on gRPC every time: grpc-js's RESOURCE_EXHAUSTED past twice the bound",
    () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({ agent, card, maxBodyBytes: limit, transports: ["GRPC"] })
        for (let i = 0; i < tries; i++) {
          expect(yield* grpcCall(server.urls.GRPC!, new Uint8Array(size))).toBe(GRPC_STATUS_CODE.RESOURCE_EXHAUSTED)
        }
      }),
    120_000
  )

  it.scopedLive(
    "gets its 413 on JSON-RPC every time when the platform's router answers it (httpSpans)",
    () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({ agent, card, maxBodyBytes: limit, httpSpans: true })
        yield* everyTry(server.rpcUrl, jsonRpcRefusal)
      }),
    120_000
  )

  it.scopedLive(
    "gets its 413 every time from a router mounted on the application's own server",
    () =>
      Effect.gen(function*() {
        const httpServer = yield* NodeHttpServer.make(() => Http.createServer(), { host: "127.0.0.1", port: 0 })
        const url = `http://127.0.0.1:${(httpServer.address as HttpServer.TcpAddress).port}`
        const a2a = yield* A2AServer.makeRouter({ agent, card, publicUrl: url, maxBodyBytes: limit })
        yield* httpServer.serve(HttpRouter.concat(HttpRouter.empty, a2a.router))
        yield* everyTry(a2a.rpcUrl, jsonRpcRefusal)
        yield* everyTry(`${a2a.urls["HTTP+JSON"]}/message:send`, restRefusal)
      }),
    120_000
  )
})
