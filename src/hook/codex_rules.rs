//! Codex's own command rules (`prefix_rule(...)` in `rules/*.rules`), kept
//! in force under dcjail. Codex checks them on the command a hook hands
//! back, and dcjail hands back `dcjail … -- bash -c '<original>'`, which no
//! rule names; so the hook checks the original against them first, and a
//! `forbidden` or `prompt` rule (Codex cannot ask through a hook) denies the
//! call. The rules are matched at the start of every simple command of the
//! line (split at `&&`, `||`, `;`, `|`, `&`, newlines and parentheses),
//! which is where Codex matches them and, for lines Codex would not split,
//! wider: a rule never stops holding because dcjail is installed.
//!
//! Only the prefix-rule subset of the rule language is read; a file this
//! reader cannot parse denies every shell call, naming the file.

use std::path::{Path, PathBuf};

/// What a rule says of a command it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decision {
    Allow,
    Prompt,
    Forbidden,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Each position: the words accepted there.
    pub pattern: Vec<Vec<String>>,
    pub decision: Decision,
    pub justification: Option<String>,
}

/// The rule files Codex reads: `$CODEX_HOME/rules` (default
/// `~/.codex/rules`) and the project's `.codex/rules`.
pub fn files(project: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".codex"))
        });
    let mut out = Vec::new();
    for dir in home.into_iter().chain([project.join(".codex")]) {
        let Ok(rd) = std::fs::read_dir(dir.join("rules")) else {
            continue;
        };
        let mut fs: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "rules"))
            .collect();
        fs.sort();
        out.extend(fs);
    }
    out
}

/// Every rule of `files`; `Err` names the file that cannot be read.
pub fn load(files: &[PathBuf]) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        rules.extend(parse(&text).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    Ok(rules)
}

/// The strictest rule matching `command`, if any matches.
pub fn decide<'a>(rules: &'a [Rule], command: &str) -> Option<&'a Rule> {
    let cmds = simple_commands(command);
    rules
        .iter()
        .filter(|r| cmds.iter().any(|c| matches(r, c)))
        .max_by_key(|r| r.decision)
}

fn matches(rule: &Rule, words: &[String]) -> bool {
    rule.pattern.len() <= words.len()
        && rule
            .pattern
            .iter()
            .zip(words)
            .all(|(alts, w)| alts.iter().any(|a| a == w))
}

/// The words of each simple command of a shell line, quotes removed.
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut cmds = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut Option<String>, cmds: &mut Vec<Vec<String>>| {
        if let Some(w) = word.take() {
            if let Some(c) = cmds.last_mut() {
                c.push(w);
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    w.push(d);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                w.push(e);
                            }
                        }
                        _ => w.push(d),
                    }
                }
            }
            '\\' => {
                if let Some(e) = chars.next() {
                    if e != '\n' {
                        word.get_or_insert_with(String::new).push(e);
                    }
                }
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' => {
                end_word(&mut word, &mut cmds);
                cmds.push(Vec::new());
            }
            '$' if chars.peek() == Some(&'(') => {
                end_word(&mut word, &mut cmds);
                cmds.push(Vec::new());
            }
            c if c.is_whitespace() => end_word(&mut word, &mut cmds),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut word, &mut cmds);
    cmds.retain(|c| !c.is_empty());
    // `VAR=value cmd` runs cmd: the rules see it from cmd on.
    for c in &mut cmds {
        let skip = c
            .iter()
            .take_while(|w| {
                w.split_once('=').is_some_and(|(k, _)| {
                    !k.is_empty() && k.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                })
            })
            .count();
        c.drain(..skip.min(c.len().saturating_sub(1)));
    }
    cmds
}

/// A value of the rule language's subset.
#[derive(Debug, Clone)]
enum Val {
    Str(String),
    List(Vec<Val>),
    Other,
}

/// The `prefix_rule(...)` calls of a rules file.
pub fn parse(text: &str) -> Result<Vec<Rule>, String> {
    let toks = lex(text)?;
    let mut rules = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let Tok::Ident(name) = &toks[i] else {
            return Err(format!("unexpected {:?}", toks[i]));
        };
        if toks.get(i + 1) != Some(&Tok::Punct('(')) {
            return Err(format!("`{name}` is not a call"));
        }
        i += 2;
        let mut args = Vec::new();
        while toks.get(i) != Some(&Tok::Punct(')')) {
            let Some(Tok::Ident(k)) = toks.get(i) else {
                return Err(format!("`{name}(…)`: an argument without a name"));
            };
            if toks.get(i + 1) != Some(&Tok::Punct('=')) {
                return Err(format!("`{name}(…)`: `{k}` without `=`"));
            }
            i += 2;
            let v = value(&toks, &mut i)?;
            args.push((k.clone(), v));
            if toks.get(i) == Some(&Tok::Punct(',')) {
                i += 1;
            }
        }
        i += 1;
        if name == "prefix_rule" {
            rules.push(rule(&args)?);
        }
    }
    Ok(rules)
}

fn rule(args: &[(String, Val)]) -> Result<Rule, String> {
    let get = |k: &str| args.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let Some(Val::List(items)) = get("pattern") else {
        return Err("prefix_rule without a `pattern` list".into());
    };
    let mut pattern = Vec::new();
    for it in items {
        pattern.push(match it {
            Val::Str(s) => vec![s.clone()],
            Val::List(alts) => alts
                .iter()
                .map(|a| match a {
                    Val::Str(s) => Ok(s.clone()),
                    _ => Err("a pattern alternative that is not a string".to_string()),
                })
                .collect::<Result<_, _>>()?,
            Val::Other => return Err("a pattern element that is not a string".into()),
        });
    }
    if pattern.is_empty() {
        return Err("prefix_rule with an empty pattern".into());
    }
    let decision = match get("decision") {
        None => Decision::Allow,
        Some(Val::Str(s)) if s == "allow" => Decision::Allow,
        Some(Val::Str(s)) if s == "prompt" => Decision::Prompt,
        Some(Val::Str(s)) if s == "forbidden" => Decision::Forbidden,
        Some(v) => return Err(format!("prefix_rule with decision {v:?}")),
    };
    let justification = match get("justification") {
        Some(Val::Str(s)) => Some(s.clone()),
        _ => None,
    };
    Ok(Rule {
        pattern,
        decision,
        justification,
    })
}

fn value(toks: &[Tok], i: &mut usize) -> Result<Val, String> {
    match toks.get(*i) {
        Some(Tok::Str(s)) => {
            *i += 1;
            Ok(Val::Str(s.clone()))
        }
        Some(Tok::Ident(_)) | Some(Tok::Number) => {
            *i += 1;
            Ok(Val::Other)
        }
        Some(Tok::Punct('[')) => {
            *i += 1;
            let mut items = Vec::new();
            while toks.get(*i) != Some(&Tok::Punct(']')) {
                if *i >= toks.len() {
                    return Err("an unclosed list".into());
                }
                items.push(value(toks, i)?);
                if toks.get(*i) == Some(&Tok::Punct(',')) {
                    *i += 1;
                }
            }
            *i += 1;
            Ok(Val::List(items))
        }
        other => Err(format!("unexpected {other:?}")),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Number,
    Punct(char),
}

fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '#' => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            c if c.is_whitespace() => {}
            '(' | ')' | '[' | ']' | '=' | ',' => out.push(Tok::Punct(c)),
            '"' | '\'' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => return Err("an unclosed string".into()),
                        Some(d) if d == c => break,
                        Some('\\') => match chars.next() {
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some(e) => s.push(e),
                            None => return Err("an unclosed string".into()),
                        },
                        Some(d) => s.push(d),
                    }
                }
                out.push(Tok::Str(s));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut s = String::from(c);
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '_' {
                        s.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Tok::Ident(s));
            }
            c if c.is_ascii_digit() => {
                while chars.peek().is_some_and(|d| d.is_ascii_alphanumeric()) {
                    chars.next();
                }
                out.push(Tok::Number);
            }
            c => return Err(format!("an unexpected character {c:?}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = r#"
# comment
prefix_rule(
    pattern = ["git", ["push", "fetch"]],
    decision = "prompt",
    justification = "ask first",
    match = ["git push origin", ["git", "fetch"]],
)
prefix_rule(pattern = ["touch"], decision = "forbidden")
prefix_rule(pattern = ["ls"])
"#;

    #[test]
    fn the_prefix_rule_subset_is_read() {
        let r = parse(RULES).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0].pattern,
            vec![vec!["git".to_string()], vec!["push".into(), "fetch".into()]]
        );
        assert_eq!(r[0].decision, Decision::Prompt);
        assert_eq!(r[1].decision, Decision::Forbidden);
        assert_eq!(r[2].decision, Decision::Allow);
    }

    #[test]
    fn a_rule_matches_at_the_start_of_every_simple_command() {
        let r = parse(RULES).unwrap();
        let d = |c: &str| decide(&r, c).map(|r| r.decision);
        assert_eq!(d("touch x"), Some(Decision::Forbidden));
        assert_eq!(d("echo a && touch x"), Some(Decision::Forbidden));
        assert_eq!(d("cd a; 'touch' x"), Some(Decision::Forbidden));
        assert_eq!(d("FOO=1 touch x"), Some(Decision::Forbidden));
        assert_eq!(d("echo $(touch x)"), Some(Decision::Forbidden));
        assert_eq!(d("(git push)"), Some(Decision::Prompt));
        assert_eq!(d("ls | git fetch"), Some(Decision::Prompt));
        assert_eq!(d("ls -l"), Some(Decision::Allow));
        assert_eq!(d("echo touch"), None);
        assert_eq!(d("git status"), None);
    }

    #[test]
    fn a_file_outside_the_subset_is_an_error() {
        assert!(parse("prefix_rule(pattern = [\"a\"], decision = \"maybe\")").is_err());
        assert!(parse("prefix_rule(pattern = [\"a\"]").is_err());
        assert!(parse("x = 1").is_err());
        assert!(parse("prefix_rule(decision = \"allow\")").is_err());
    }
}
