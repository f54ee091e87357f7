// The expectations of filo-core's resource_paths unit tests, computed by pi 0.73.1's own resolver
// (DefaultPackageManager.resolve over a temporary tree). NOT part of CI:
//     node scripts/record-pi/resource-paths.mjs   (pi installed under /tmp/pi073)
// Each line: the enabled files of one case, relative to the tree, in pi's order.
import fs from "node:fs"; import path from "node:path"; import os from "node:os";
const P = "/tmp/pi073/node_modules/@mariozechner/pi-coding-agent/dist/core/";
const { DefaultPackageManager } = await import(P + "package-manager.js");
const { SettingsManager } = await import(P + "settings-manager.js");
const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "pmc-")));
const w = (f, t = "x") => { const p = path.join(root, f); fs.mkdirSync(path.dirname(p), { recursive: true }); fs.writeFileSync(p, t); };
async function run(kind, files, project, user, cwdRel = "proj") {
  fs.rmSync(root, { recursive: true, force: true }); fs.mkdirSync(root);
  files.forEach(f => w(f));
  const cwd = path.join(root, cwdRel), agentDir = path.join(root, "agent");
  fs.mkdirSync(path.join(cwd, ".pi"), { recursive: true }); fs.mkdirSync(agentDir, { recursive: true });
  fs.writeFileSync(path.join(cwd, ".pi/settings.json"), JSON.stringify({ [kind]: project }));
  fs.writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ [kind]: user }));
  process.env.HOME = path.join(root, "home");
  const sm = SettingsManager.create(cwd, agentDir);
  const pm = new DefaultPackageManager({ cwd, agentDir, settingsManager: sm });
  const r = await pm.resolve();
  return r[kind].filter(x => x.enabled).map(x => path.relative(root, x.path));
}
const prom = ["agent/prompts/a.md","agent/prompts/b.md","agent/extra/c.md","agent/extra/sub/d.md","agent/extra/sub/e.txt","proj/.pi/prompts/p.md"];
console.log(JSON.stringify(await run("prompts", prom, [], [])));
console.log(JSON.stringify(await run("prompts", prom, [], ["extra"])));
console.log(JSON.stringify(await run("prompts", prom, [], ["extra", "extra/sub/*", "!a.md"])));
console.log(JSON.stringify(await run("prompts", prom, [], ["extra", "!**/*.md", "+extra/c.md", "-prompts/b.md"])));
console.log(JSON.stringify(await run("prompts", prom, ["!p.md", "../../agent/extra/c.md"], ["!nothing"])));
const sk = ["agent/skills/one/SKILL.md","agent/skills/two/SKILL.md","agent/skills/two/nested/SKILL.md","agent/skills/top.md","agent/skills/.hidden/SKILL.md","agent/skills/node_modules/x/SKILL.md","agent/skills/gone/SKILL.md","proj/.agents/skills/ag/SKILL.md","proj/.agents/skills/root.md"];
// gitignore must be written after run() resets: run a custom path
async function skills(p, u) {
  fs.rmSync(root, { recursive: true, force: true }); fs.mkdirSync(root);
  sk.forEach(f => w(f)); w("agent/skills/.gitignore", "gone/\n");
  const cwd = path.join(root, "proj"), agentDir = path.join(root, "agent");
  fs.mkdirSync(path.join(cwd, ".pi"), { recursive: true });
  fs.writeFileSync(path.join(cwd, ".pi/settings.json"), JSON.stringify({ skills: p }));
  fs.writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ skills: u }));
  process.env.HOME = path.join(root, "home");
  const pm = new DefaultPackageManager({ cwd, agentDir, settingsManager: SettingsManager.create(cwd, agentDir) });
  return (await pm.resolve()).skills.filter(x => x.enabled).map(x => path.relative(root, x.path));
}
console.log(JSON.stringify(await skills([], [])));
console.log(JSON.stringify(await skills([], ["!one", "-skills/two"])));
console.log(JSON.stringify(await skills(["!ag"], ["-" + path.join(root, "agent/skills/one"), "!top.md"])));
console.log(JSON.stringify(await run("themes", ["home/mine/x.json", "agent/themes/t.json"], [], ["~/mine", "missing", "~/mine/x.json"])));
console.log(JSON.stringify(await run("skills", ["repo/.git/HEAD","repo/.pi/skills/parent-pi/SKILL.md","repo/.agents/skills/repo-agents/SKILL.md","repo/.agents/skills/loose.md","repo/proj/.pi/skills/here/SKILL.md","repo/proj/.agents/skills/here-agents/SKILL.md",".agents/skills/above-git/SKILL.md","home/.agents/skills/user-agents/SKILL.md","home/.agents/skills/user-loose.md"], [], [], "repo/proj")));
fs.rmSync(root, { recursive: true, force: true });
