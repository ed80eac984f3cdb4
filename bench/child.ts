/**
 * A benchmark's server in a child process of its own, so that its CPU time
 * and heap are its own: the benchmark's file forked with `serve <which>`.
 * The child sends its URL (a string) once it listens, then answers each
 * message of the parent with one object.
 */
import { type ChildProcess, fork, type Serializable } from "node:child_process"

export interface Child<Answer> {
  readonly url: string
  readonly child: ChildProcess
  /** Sends `message`; the child's next answer. */
  readonly ask: (message: Serializable) => Promise<Answer>
}

export const forkServer = <Answer>(file: string, which: string): Promise<Child<Answer>> =>
  new Promise((resolve, reject) => {
    const child = fork(file, ["serve", which], { stdio: "inherit" })
    const waiting: Array<{ readonly answer: (answer: Answer) => void; readonly fail: (error: Error) => void }> = []
    // A server that dies ends every wait on it, instead of leaving the benchmark hanging.
    child.once("exit", (code, signal) => {
      const error = new Error(`the ${which} server exited (${signal ?? code})`)
      reject(error)
      for (const waiter of waiting.splice(0)) waiter.fail(error)
    })
    child.on("message", (message) => {
      if (typeof message === "object") return waiting.shift()?.answer(message as unknown as Answer)
      resolve({
        url: String(message),
        child,
        ask: (question) =>
          new Promise((answer, fail) => {
            waiting.push({ answer, fail })
            child.send(question)
          })
      })
    })
  })
