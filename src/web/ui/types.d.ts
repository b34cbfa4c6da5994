/** What h() and append() take as children: nodes, text, nothing (skipped), or lists of them. */
export type Child = Node | string | number | boolean | null | undefined | readonly Child[]
