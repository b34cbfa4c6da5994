import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, Logger } from 'pino'

export type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * `request.log` made when the request first logs, not when it arrives (Fastify's
 * `childLoggerFactory`). Fastify makes a pino child per request, and a pino child with redaction
 * paths costs a few microseconds to build (its bindings are serialised and redacted), while at the
 * production level (`warn`) nearly every request logs nothing. A call at a level the parent
 * does not write returns at once; anything else builds the child, once, and hands it the call, so
 * what is written is the child's own line, request id and redaction included. A route with its
 * own log level gets its child at once.
 */
export function requestChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (Object.keys(options).length > 0) return logger.child(bindings, options)
  return new LazyChild(logger as Logger, bindings) as unknown as FastifyBaseLogger
}

/** Whether `log` (the app's logger, a request's, or a child of either: all pino) writes `level`. */
export function writes(log: FastifyBaseLogger, level: LogMethod): boolean {
  return (log as Logger).isLevelEnabled(level)
}

class LazyChild {
  #child: Logger | undefined
  readonly #parent: Logger
  readonly #bindings: Bindings

  constructor(parent: Logger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  get #real(): Logger {
    this.#child ??= this.#parent.child(this.#bindings)
    return this.#child
  }

  #log(level: LogMethod, args: unknown[]): void {
    if (this.#child === undefined && !this.#parent.isLevelEnabled(level)) return
    ;(this.#real[level] as (...args: unknown[]) => void)(...args)
  }

  get level(): LevelWithSilentOrString {
    return this.#child?.level ?? this.#parent.level
  }

  set level(level: LevelWithSilentOrString) {
    this.#real.level = level
  }

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level)
  }

  bindings(): Bindings {
    return this.#child?.bindings() ?? { ...this.#parent.bindings(), ...this.#bindings }
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#real.child(bindings, options)
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args)
  }
  error(...args: unknown[]): void {
    this.#log('error', args)
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args)
  }
  info(...args: unknown[]): void {
    this.#log('info', args)
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args)
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args)
  }
  silent(): void {}
}
