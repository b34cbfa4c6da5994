import { createInterface } from 'node:readline'

/**
 * A password from standard input, never a flag (it would be in the shell's history and the
 * process list): the first line of what is piped in, or, at a terminal, typed without echo, once
 * per question (`questions`: ['Password: ', 'Again: '] asks twice and answers both).
 */
export async function readPasswordInput(questions: readonly string[]): Promise<string[]> {
  if (!process.stdin.isTTY) {
    let text = ''
    for await (const chunk of process.stdin) text += String(chunk)
    return [text.replace(/\r?\n$/, '').split(/\r?\n/, 1)[0] ?? '']
  }
  const ask = (question: string) =>
    new Promise<string>((resolve) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true })
      const muted = rl as unknown as { _writeToOutput: (text: string) => void }
      process.stderr.write(question)
      muted._writeToOutput = () => {}
      rl.question('', (answer) => {
        rl.close()
        process.stderr.write('\n')
        resolve(answer)
      })
    })
  const answers: string[] = []
  for (const question of questions) answers.push(await ask(question))
  return answers
}
