// Never called: the benchmark runs mem0 with disableHistory: true (see package.json).
function Database() {
  throw new Error("better-sqlite3 stub: mem0 history is disabled in the benchmark");
}
module.exports = Database;
module.exports.default = Database;
