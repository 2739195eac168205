// C++ Pinocchio's constrained dynamics and their derivatives, timed single-threaded: the
// same-thread yardstick of `soddp bench contact` (problems/reference/pinocchio_cpp.py builds
// it beside the shared C++ reference tool, whose urdf2model writes the model archive).
//
// usage: pinocchio_contacts_bench ARCHIVE FRAMES KINDS [N]
//   ARCHIVE : a Pinocchio text archive of a model with a free-flyer root (urdf2model ... floating)
//   FRAMES  : the contact frames, comma separated
//   KINDS   : one digit per frame: 3 (CONTACT_3D) or 6 (CONTACT_6D), LOCAL_WORLD_ALIGNED both
//   N       : timed calls (default 2000), cycling over 100 random states, after 200 untimed
// Prints: TIMING nv=.. contacts=.. derivs_us=.. (constraintDynamics then
// computeConstraintDynamicsDerivatives, proximal settings: accuracy 1e-14, mu 0, 1 iteration)

#include <pinocchio/serialization.hpp>

#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

using namespace pinocchio;

int main(int argc, char ** argv)
{
  if (argc < 4)
  {
    std::fprintf(stderr, "usage: %s ARCHIVE FRAMES KINDS [N]\n", argv[0]);
    return 2;
  }
  Model model;
  model.loadFromText(argv[1]);
  const int n = argc > 4 ? std::atoi(argv[4]) : 2000;
  model.lowerPositionLimit.head<3>().fill(-1.0);  // the free flyer's translation
  model.upperPositionLimit.head<3>().fill(1.0);

  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintModel) models;
  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintData) datas;
  std::stringstream frames(argv[2]);
  const std::string kinds(argv[3]);
  std::string name;
  for (std::size_t k = 0; std::getline(frames, name, ','); ++k)
  {
    if (!model.existFrame(name) || k >= kinds.size())
    {
      std::fprintf(stderr, "unknown frame or missing kind: %s\n", name.c_str());
      return 2;
    }
    const Frame & f = model.frames[model.getFrameId(name)];
    models.push_back(RigidConstraintModel(kinds[k] == '6' ? CONTACT_6D : CONTACT_3D, model,
                                          f.parentJoint, f.placement, LOCAL_WORLD_ALIGNED));
    datas.push_back(RigidConstraintData(models.back()));
  }
  Data data(model);
  initConstraintDynamics(model, data, models, datas);
  ProximalSettings prox(1e-14, 0.0, 1);

  const int ns = 100;
  std::vector<Eigen::VectorXd> qs, vs, taus;
  std::srand(1);
  for (int i = 0; i < ns; ++i)
  {
    qs.push_back(randomConfiguration(model));
    vs.push_back(Eigen::VectorXd::Random(model.nv));
    taus.push_back(Eigen::VectorXd::Random(model.nv));
  }
  auto run = [&](int i) {
    constraintDynamics(model, data, qs[i % ns], vs[i % ns], taus[i % ns], models, datas, prox);
    computeConstraintDynamicsDerivatives(model, data, models, datas, prox);
  };
  for (int i = 0; i < 200; ++i)
    run(i);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    run(i);
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("TIMING nv=%d contacts=%zu derivs_us=%.4f\n", int(model.nv), models.size(),
              std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  return 0;
}
