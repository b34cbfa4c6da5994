import { type Dispatcher, fetch } from 'undici'

/** One Server-Sent Event as a client reads it (comments are counted apart). */
export interface SseEvent {
  id?: string
  event?: string
  retry?: number
  data: string
}

/**
 * A raw Server-Sent Events reader over fetch (undici): it parses the wire format itself, so a
 * test sees exactly what the server wrote (field order, retry, comments).
 */
export interface SseStream {
  status: number
  headers: { get(name: string): string | null }
  /** Every event read so far. */
  events: SseEvent[]
  /** Comment lines read so far (heartbeats). */
  comments: string[]
  /** Resolves with the next event not yet taken (the hello first), or rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseEvent>
  /** Resolves once the server ended the response. */
  ended: Promise<void>
  /** The whole body read so far, as text. */
  raw(): string
  close(): void
}

export async function openSse(
  url: string,
  headers: Record<string, string> = {},
  options: { dispatcher?: Dispatcher } = {},
): Promise<SseStream> {
  const controller = new AbortController()
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
    ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
  })
  const events: SseEvent[] = []
  const comments: string[] = []
  let taken = 0
  let text = ''
  let wake: (() => void) | undefined
  let finished = false
  const notify = () => {
    const w = wake
    wake = undefined
    w?.()
  }

  const parse = (block: string) => {
    const event: SseEvent = { data: '' }
    const data: string[] = []
    let any = false
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        comments.push(line.slice(1).trim())
        continue
      }
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      any = true
      if (field === 'data') data.push(value)
      else if (field === 'id') event.id = value
      else if (field === 'event') event.event = value
      else if (field === 'retry') event.retry = Number(value)
    }
    if (!any) return
    event.data = data.join('\n')
    events.push(event)
  }

  const ended = (async () => {
    if (response.body === null) return
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of response.body) {
        const piece = decoder.decode(chunk as Uint8Array, { stream: true })
        text += piece
        buffer += piece
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          parse(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
        }
        notify()
      }
    } catch {
      // Aborted by close(), or the connection dropped: the stream has ended either way.
    } finally {
      finished = true
      notify()
    }
  })()

  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    ended,
    raw: () => text,
    async next(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (taken >= events.length) {
        if (finished) throw new Error(`the stream ended after ${events.length} events:\n${text}`)
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`no event within ${timeoutMs} ms after ${events.length} events:\n${text}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      const event = events[taken] as SseEvent
      taken += 1
      return event
    },
    close: () => controller.abort(),
  }
}
