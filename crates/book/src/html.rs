//! A book as static HTML pages to browse: one page per position, its board drawn as inline SVG,
//! its moves in Chinese notation with their W/D/L, searched values and openings, each linking to
//! the position it leads to. The pages need nothing but themselves (no scripts, fonts or images
//! from elsewhere).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use xiangqi::notation::Chinese;
use xiangqi::{Color, Move, Position, Square};

use crate::book::{Book, BookMove, Entry};
use crate::error::{BookError, Result};

/// How much of a book [`Book::export_html`] writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HtmlConfig {
    /// Most pages written, nearest the start position first.
    pub max_positions: usize,
}

impl Default for HtmlConfig {
    fn default() -> HtmlConfig {
        HtmlConfig { max_positions: 1000 }
    }
}

/// What [`Book::export_html`] wrote.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HtmlSummary {
    /// Pages written (`index.html` is the start position).
    pub pages: usize,
    /// Positions in the book that moves lead to but that were left out by `max_positions`.
    pub left_out: usize,
}

/// A position to be written, as first reached from the start position.
struct Page {
    pos: Position,
    entry: Entry,
    /// The page it was first reached from and the move played there.
    parent: Option<(usize, Move)>,
}

/// Where a move leads, with that position's opening name: a page, a position left out, or none
/// in the book.
enum Target {
    Page(usize, String),
    LeftOut(String),
    Absent,
}

impl Book {
    /// Writes the positions reachable from the start position through the book's moves into
    /// `dir` (created if missing; pages there are replaced), breadth first, up to
    /// `config.max_positions` pages. A position and its mirror image are one book entry but two
    /// pages, each drawn the way its line reaches it.
    ///
    /// ```
    /// # use xiangqi::game::{Game, GameConfig};
    /// # use xqz_book::{Book, BookBuilder, BuildConfig, HtmlConfig};
    /// # use xqz_dataset::{GameId, GameRecord};
    /// # let mut game = Game::new(GameConfig { max_plies: Some(2), ..Default::default() });
    /// # for mv in ["h2e2", "h9g7"] { game.push_str(mv)?; }
    /// # let mut builder = BookBuilder::new(BuildConfig::default());
    /// # builder.add_game(&GameRecord::from_game(&game, GameId::from_u128(1))?)?;
    /// let dir = tempfile::tempdir()?;
    /// # builder.write(&dir.path().join("book.sqlite"), false)?;
    /// // A book of one game, 炮二平五 马8进7: the start position and the one after 炮二平五.
    /// let book = Book::open(dir.path().join("book.sqlite"))?;
    /// let summary = book.export_html(&dir.path().join("html"), HtmlConfig::default())?;
    /// assert_eq!(summary.pages, 2);
    /// let start = std::fs::read_to_string(dir.path().join("html/index.html"))?;
    /// assert!(start.contains("<svg") && start.contains(r#"<a href="p1.html">炮八平五</a>"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_html(&self, dir: &Path, config: HtmlConfig) -> Result<HtmlSummary> {
        let start = Position::startpos();
        let Some(entry) = self.probe(&start)? else {
            return Err(BookError::Export {
                path: dir.to_path_buf(),
                message: format!("{} has no moves for the start position", self.path().display()),
            });
        };
        std::fs::create_dir_all(dir).map_err(|source| BookError::Io { path: dir.to_path_buf(), source })?;
        let frame = |pos: &Position, entry: &Entry| (entry.fen.clone(), self.locate(pos).0.mirrored);
        let mut index = HashMap::from([(frame(&start, &entry), 0)]);
        let mut pages = vec![Some(Page { pos: start, entry, parent: None })];
        let mut left_out = HashSet::new();
        let mut next = 0;
        while next < pages.len() {
            let page = pages[next].take().expect("each page is written once");
            let mut targets = Vec::with_capacity(page.entry.moves.len());
            for m in &page.entry.moves {
                let mut child = page.pos.clone();
                child.play(m.mv).map_err(|e| BookError::NotABook {
                    path: self.path().to_path_buf(),
                    message: format!("stored move {} in {}: {e}", m.mv, page.entry.fen),
                })?;
                let target = match self.probe(&child)? {
                    None => Target::Absent,
                    Some(entry) => {
                        let (key, name) = (frame(&child, &entry), opening(&entry));
                        match index.get(&key) {
                            Some(&i) => Target::Page(i, name),
                            None if pages.len() < config.max_positions => {
                                index.insert(key, pages.len());
                                pages.push(Some(Page { pos: child, entry, parent: Some((next, m.mv)) }));
                                Target::Page(pages.len() - 1, name)
                            }
                            None => {
                                left_out.insert(key);
                                Target::LeftOut(name)
                            }
                        }
                    }
                };
                targets.push(target);
            }
            let html = render(&page, &targets, &breadcrumb(&pages, &page, next));
            let path = dir.join(file_name(next));
            std::fs::write(&path, html).map_err(|source| BookError::Io { path, source })?;
            // Kept for the line of the pages reached from it; the entry is no longer needed.
            pages[next] = Some(Page { entry: Entry { moves: Vec::new(), ..page.entry }, ..page });
            next += 1;
        }
        Ok(HtmlSummary { pages: pages.len(), left_out: left_out.len() })
    }
}

fn file_name(page: usize) -> String {
    if page == 0 { "index.html".into() } else { format!("p{page}.html") }
}

/// The line from the start position to `page` (number `at`): (page, move into it) pairs.
fn breadcrumb(pages: &[Option<Page>], page: &Page, at: usize) -> Vec<(usize, Move, Position)> {
    let mut line = Vec::new();
    let (mut parent, mut here) = (page.parent, at);
    while let Some((up, mv)) = parent {
        let from = pages[up].as_ref().expect("an earlier page is kept");
        line.push((here, mv, from.pos.clone()));
        (parent, here) = (from.parent, up);
    }
    line.reverse();
    line
}

/// Text with `&`, `<`, `>` and `"` escaped: the book's strings come from a file anyone may write.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn chinese(pos: &Position, mv: Move) -> String {
    Chinese::from_move(pos, mv).map_or_else(|_| mv.to_string(), |c| c.to_string())
}

fn opening(entry: &Entry) -> String {
    match (&entry.ecco, &entry.opening) {
        (Some(code), Some(name)) => escape(&format!("{code} {name}")),
        _ => String::new(),
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;background:#fafafa}\
nav{margin-bottom:.8em}nav a{color:#06c}h1{font-size:1.3em;margin:.3em 0}\
.main{display:flex;gap:2em;align-items:flex-start;flex-wrap:wrap}\
table{border-collapse:collapse}th,td{padding:.25em .6em;text-align:right;border-bottom:1px solid #ddd}\
th:first-child,td:first-child,td.opening{text-align:left}td.move a{color:#06c;font-size:1.15em}\
.bar{display:inline-flex;width:120px;height:.8em;vertical-align:middle;border:1px solid #999;margin-right:.4em}\
.bar span{display:block;height:100%}.w{background:#c33}.d{background:#bbb}.l{background:#333}\
.v{background:#3a7}.fen{font-family:monospace;color:#555;margin-top:1em}";

/// One position's page.
fn render(page: &Page, targets: &[Target], line: &[(usize, Move, Position)]) -> String {
    let entry = &page.entry;
    let mut html = String::new();
    let title = match opening(entry) {
        name if !name.is_empty() => name,
        _ if line.is_empty() => "Start position".into(),
        _ => format!("Position after {} plies", line.len()),
    };
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"zh\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>{STYLE}</style></head><body>\n<nav id=\"line\"><a href=\"index.html\">Start</a>"
    );
    for (i, (at, mv, from)) in line.iter().enumerate() {
        let text = chinese(from, *mv);
        if i + 1 == line.len() {
            let _ = write!(html, " › {text}");
        } else {
            let _ = write!(html, " › <a href=\"{}\">{text}</a>", file_name(*at));
        }
    }
    let turn = match page.pos.turn() {
        Color::Red => "Red to move",
        Color::Black => "Black to move",
    };
    let _ = write!(html, "</nav>\n<h1>{title}</h1>\n<p>{turn}</p>\n<div class=\"main\">\n");
    html.push_str(&board(&page.pos, line.last().map(|l| l.1)));
    html.push_str(
        "<table id=\"moves\"><thead><tr><th>Move</th><th>ICCS</th><th>Games</th><th>W/D/L</th><th>Value</th>\
         <th>Visits</th><th>Prior</th><th>Leads to</th></tr></thead><tbody>\n",
    );
    for (m, target) in entry.moves.iter().zip(targets) {
        html.push_str(&move_row(&page.pos, m, target));
    }
    let _ = write!(
        html,
        "</tbody></table>\n</div>\n<p class=\"fen\">{}</p>\n</body></html>\n",
        escape(&page.pos.to_string())
    );
    html
}

fn move_row(pos: &Position, m: &BookMove, target: &Target) -> String {
    let text = chinese(pos, m.mv);
    let (cell, leads_to) = match target {
        Target::Page(i, name) => (format!("<a href=\"{}\">{text}</a>", file_name(*i)), name.clone()),
        Target::LeftOut(name) => (text, format!("{name} (beyond the page limit)")),
        Target::Absent => (text, "not in the book".into()),
    };
    let wdl = match m.games {
        0 => "-".into(),
        games => {
            let share = |n: u64| 100.0 * n as f64 / games as f64;
            format!(
                "<span class=\"bar\" title=\"{w}/{d}/{l}\"><span class=\"w\" style=\"width:{:.1}%\"></span>\
                 <span class=\"d\" style=\"width:{:.1}%\"></span><span class=\"l\" style=\"width:{:.1}%\"></span>\
                 </span>{w}/{d}/{l}",
                share(m.wins),
                share(m.draws),
                share(m.losses),
                w = m.wins,
                d = m.draws,
                l = m.losses
            )
        }
    };
    let value = m.value.map_or_else(
        || "-".into(),
        |v| {
            format!(
                "<span class=\"bar\"><span class=\"v\" style=\"width:{:.1}%\"></span></span>{v:+.3}",
                50.0 * (v.clamp(-1.0, 1.0) + 1.0)
            )
        },
    );
    format!(
        "<tr><td class=\"move\">{cell}</td><td>{}</td><td>{}</td><td>{wdl}</td><td>{value}</td><td>{}</td>\
         <td>{}</td><td class=\"opening\">{leads_to}</td></tr>\n",
        m.mv,
        m.games,
        m.visits.map_or_else(|| "-".into(), |n| n.to_string()),
        m.prior.map_or_else(|| "-".into(), |p| format!("{:.1}%", 100.0 * p)),
    )
}

/// Pixels between two lines of the board, and from the outer lines to the picture's edge.
const CELL: i32 = 44;
const MARGIN: i32 = 32;

/// The centre of a point: Red's side at the bottom, file a on the left.
fn point(file: i32, rank: i32) -> (i32, i32) {
    (MARGIN + CELL * file, MARGIN + CELL * (9 - rank))
}

/// The board as an SVG picture: lines, river, palaces, the pieces as Chinese characters, and the
/// last move's two points marked.
fn board(pos: &Position, last: Option<Move>) -> String {
    let (width, height) = (2 * MARGIN + 8 * CELL, 2 * MARGIN + 9 * CELL);
    let mut svg = format!(
        "<svg id=\"board\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">\
         <rect width=\"{width}\" height=\"{height}\" fill=\"#e8c88c\"/><g stroke=\"#5a3b1a\" stroke-width=\"1.2\">",
        escape(&pos.to_string())
    );
    let mut line = |(x1, y1): (i32, i32), (x2, y2): (i32, i32)| {
        let _ = write!(svg, "<line x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\"/>");
    };
    for rank in 0..10 {
        line(point(0, rank), point(8, rank));
    }
    for file in 0..9 {
        // The river cuts the inner files; the outer two run through.
        if file == 0 || file == 8 {
            line(point(file, 0), point(file, 9));
        } else {
            line(point(file, 0), point(file, 4));
            line(point(file, 5), point(file, 9));
        }
    }
    for (bottom, top) in [(0, 2), (7, 9)] {
        line(point(3, bottom), point(5, top));
        line(point(5, bottom), point(3, top));
    }
    let (_, river) = point(0, 4);
    let _ = write!(
        svg,
        "</g><g font-size=\"22\" fill=\"#5a3b1a\" text-anchor=\"middle\" dominant-baseline=\"central\">\
         <text x=\"{}\" y=\"{}\">楚 河</text><text x=\"{}\" y=\"{}\">漢 界</text></g>",
        point(2, 0).0,
        river - CELL / 2,
        point(6, 0).0,
        river - CELL / 2
    );
    let coords = |sq: Square| point(i32::from(sq.file().index()), i32::from(sq.rank().index()));
    if let Some(mv) = last {
        let (x, y) = coords(mv.from());
        let _ = write!(svg, "<circle class=\"from\" cx=\"{x}\" cy=\"{y}\" r=\"7\" fill=\"#2a7\"/>");
    }
    for sq in Square::all() {
        let Some(piece) = pos.piece_at(sq) else { continue };
        let (x, y) = coords(sq);
        let colour = match piece.color {
            Color::Red => "#c0161b",
            Color::Black => "#161616",
        };
        let ring = if last.is_some_and(|mv| mv.to() == sq) { "#2a7\" stroke-width=\"4" } else { colour };
        let _ = write!(
            svg,
            "<g class=\"piece\"><circle cx=\"{x}\" cy=\"{y}\" r=\"{}\" fill=\"#fbeed2\" stroke=\"{ring}\"/>\
             <text x=\"{x}\" y=\"{y}\" font-size=\"24\" fill=\"{colour}\" text-anchor=\"middle\" \
             dominant-baseline=\"central\">{}</text></g>",
            CELL / 2 - 3,
            Chinese::piece_char(piece)
        );
    }
    svg.push_str("</svg>\n");
    svg
}
