export default { test: { include: ['*.vitest.test.mjs'], testTimeout: 60_000, hookTimeout: 60_000 } }
